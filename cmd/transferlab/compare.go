package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newCompareCmd is a placeholder replaced by the owner of this sub-command.
func newCompareCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "compare",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("compare: not built yet")
		},
	}
}
