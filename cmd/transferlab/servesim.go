package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/sim"
)

// newServeSimCmd builds `serve-sim`: the embedded simulated OpenAI-compatible
// server alone on a port, until interrupted, so any client (curl, another
// benchmark) can hit it.
func newServeSimCmd() *cobra.Command {
	var (
		addr       string
		configPath string
		overrides  []string
		capacity   string
		child      bool
	)
	cmd := &cobra.Command{
		Use:   "serve-sim",
		Short: "Serve the simulated OpenAI-compatible server (Llama-3-8B on an H200-like GPU) until interrupted",
		Long: "Starts the embedded simulator (package sim; cost model in sim/COSTMODEL.md) on --addr and\n" +
			"prints its URL and effective config. Endpoints: POST /v1/completions, POST /v1/chat/completions\n" +
			"(streaming SSE or not), GET /v1/models, GET /health, GET /v1/profile, POST /v1/profile/reset,\n" +
			"GET /v1/truth (per-request ground truth as JSON lines, times in ns on the simulator's clock; sim.TruthLine).\n" +
			"Every figure it produces is simulated. Example:\n" +
			"  curl -N localhost:8000/v1/completions -d '{\"prompt\":[1,2,3],\"max_tokens\":4,\"stream\":true}'",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := sim.LoadConfigWith(configPath, overrides)
			if err != nil {
				return fmt.Errorf("serve-sim: %w", err)
			}
			out := cmd.OutOrStdout()
			if capacity != "" {
				return printSimCapacity(cmd, cfg, capacity)
			}
			srv, err := sim.New(cfg)
			if err != nil {
				return fmt.Errorf("serve-sim: %w", err)
			}
			if err := srv.Start(addr); err != nil {
				_ = srv.Close(context.Background())
				return fmt.Errorf("serve-sim: %w", err)
			}
			if child {
				return srv.ServeChild(cmd.Context(), out, cmd.InOrStdin())
			}
			eff, err := yaml.Marshal(srv.Config())
			if err != nil {
				_ = srv.Close(context.Background())
				return fmt.Errorf("serve-sim: encoding the effective config: %w", err)
			}
			fmt.Fprintf(out, "serve-sim: serving the simulated OpenAI API at %s (all figures simulated; Ctrl-C stops)\n", srv.BaseURL())
			fmt.Fprintf(out, "# effective config\n%s", eff)
			<-cmd.Context().Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			fmt.Fprintln(out, "serve-sim: stopping")
			return srv.Close(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8000", "listen address (port 0 picks a free port)")
	f.StringVar(&configPath, "config", "", "YAML sim config (sim.Config keys; keys left out keep the Llama-3-8B/H200 defaults; unknown keys rejected)")
	f.StringArrayVar(&overrides, "override", nil, "kernel override OP=FACTOR: divide op OP's time by FACTOR (repeatable; ops: "+strings.Join(sim.OpNames(), ", ")+")")
	f.StringVar(&capacity, "capacity", "", "print the saturation throughput for requests of IN:OUT tokens (e.g. 1020:130) and exit instead of serving")
	f.BoolVar(&child, "child", false, "print only the base URL and stop when stdin closes (for scripts that start serve-sim as a child)")
	_ = f.MarkHidden("child")
	return cmd
}

// printSimCapacity prints sim.Config.Capacity for IN:OUT over as many
// requests as the config's batch needs (sim.Config.CapacityRequests: a
// fixed 2,000 measured a step of 8,192 sequences draining, not saturation).
func printSimCapacity(cmd *cobra.Command, cfg sim.Config, spec string) error {
	l, err := sim.ParseLengths(spec)
	if err != nil {
		return fmt.Errorf("serve-sim: --capacity %w", err)
	}
	n := cfg.CapacityRequests()
	c, err := cfg.Capacity([]sim.Lengths{l}, n)
	if err != nil {
		return fmt.Errorf("serve-sim: %w", err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "saturation (simulated, %d in / %d out, %d requests queued at once, the middle %d measured): %.0f output tok/s, %.2f req/s, mean step %v, mean running seqs %.0f\n",
		l.InputTokens, l.OutputTokens, n, c.Requests, c.OutputTokPerS, c.RequestsPerS, c.MeanStep.Round(time.Microsecond), c.MeanRunningSeqs)
	return nil
}
