package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newTraceCmd is a placeholder replaced by the owner of this sub-command.
func newTraceCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "trace",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("trace: not built yet")
		},
	}
}
