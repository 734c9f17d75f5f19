package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newProfileCmd is a placeholder replaced by the owner of this sub-command.
func newProfileCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "profile",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("profile: not built yet")
		},
	}
}
