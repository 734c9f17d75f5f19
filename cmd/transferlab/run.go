package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newRunCmd is a placeholder replaced by the owner of this sub-command.
func newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "run",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("run: not built yet")
		},
	}
}
