package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/transferlab/transferlab/clientbench"
)

// newBenchClientCmd measures the instrument itself (package clientbench).
func newBenchClientCmd() *cobra.Command {
	var o clientbench.Options
	cmd := &cobra.Command{
		Use:   clientbench.Command,
		Short: "Measure the load generator's own limits against a fast fake server (not a lab result)",
		Long:  clientbench.Help,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchClientExit(clientbench.Run(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// benchClientExit carries bench-client's exit status (clientbench.ExitError:
// 2 incomplete, 130/143 interrupted) through cobra; other errors exit 1.
func benchClientExit(err error) error {
	var ee *clientbench.ExitError
	if errors.As(err, &ee) {
		return &exitError{code: ee.Code, err: ee.Err}
	}
	return err
}
