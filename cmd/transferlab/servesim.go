package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newServeSimCmd is a placeholder replaced by the owner of this sub-command.
func newServeSimCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "serve-sim",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("serve-sim: not built yet")
		},
	}
}
