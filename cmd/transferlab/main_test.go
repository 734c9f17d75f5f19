package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestMain lets this test binary stand in for transferlab when a test starts
// it as a child: the shard processes of TestShardedRunAgainstOneSimulator
// (run, merge), bench-client's server children and serve-sim --child.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && slices.Contains([]string{"bench-client", "serve-sim", "run", "merge"}, os.Args[1]) {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestUnknownSubcommandFails walks the whole command tree: every command that
// groups sub-commands (the root included) must refuse an unknown one with a
// non-zero status and "unknown command", never print its help and succeed.
func TestUnknownSubcommandFails(t *testing.T) {
	var groups [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.HasSubCommands() {
			groups = append(groups, path)
		}
		for _, s := range c.Commands() {
			walk(s, append(append([]string{}, path...), s.Name()))
		}
	}
	walk(newRootCmd(), nil)
	if len(groups) < 2 {
		t.Fatalf("command groups = %v, want the root and trace at least", groups)
	}
	for _, g := range groups {
		t.Run(strings.Join(append([]string{"transferlab"}, g...), " "), func(t *testing.T) {
			args := append(append([]string{}, g...), "bogus")
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(args)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), `unknown command "bogus"`) {
				t.Fatalf("%v: err = %v, want unknown command (output %q)", args, err, out.String())
			}
		})
	}
	t.Run("bare group prints help", func(t *testing.T) {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs([]string{"trace"})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "stats") {
			t.Errorf("help = %q, want the stats sub-command listed", out.String())
		}
	})
	t.Run("suggestion", func(t *testing.T) {
		root := newRootCmd()
		root.SetArgs([]string{"trace", "stat"})
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), "did you mean stats") {
			t.Fatalf("err = %v, want a suggestion of stats", err)
		}
	})
}

// TestInterruptNote: serve-sim measures nothing, so its interrupt note does
// not promise to keep measurements; run's does.
func TestInterruptNote(t *testing.T) {
	root := newRootCmd()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve-sim", "--addr", ":0"}, "stopping the server"},
		{[]string{"run", "configs/quickstart.yaml"}, "stopping and keeping what was measured"},
		{[]string{"trace", "stats", "x.csv"}, "stopping"},
		{[]string{"bogus"}, "stopping"},
	} {
		if got := onInterrupt(root, tc.args); got != tc.want {
			t.Errorf("onInterrupt(%v) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestExitStatusHelp: the root help and README list the same exit statuses.
func TestExitStatusHelp(t *testing.T) {
	if !strings.Contains(newRootCmd().Long, exitStatusHelp) {
		t.Error("root help does not list the exit statuses")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(exitStatusHelp, "\n")[1:] {
		code := strings.Fields(l)[0]
		if !strings.Contains(string(readme), "\n| "+code+" ") {
			t.Errorf("README's exit status table lacks %s (help: %q)", code, l)
		}
	}
}
