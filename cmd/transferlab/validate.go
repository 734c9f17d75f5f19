package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newValidateCmd is a placeholder replaced by the owner of this sub-command.
func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "validate",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("validate: not built yet")
		},
	}
}
