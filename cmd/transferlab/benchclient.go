package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newBenchClientCmd is a placeholder replaced by the owner of this sub-command.
func newBenchClientCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "bench-client",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("bench-client: not built yet")
		},
	}
}
