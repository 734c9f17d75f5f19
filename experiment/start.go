package experiment

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/sim"
)

// wroteServerDir records ServersDir as written (Options.Written) once a
// launched server's folder dir exists: the launcher writes its logs there,
// also when the start fails.
func (r *runner) wroteServerDir(dir string) {
	if _, err := os.Stat(dir); err == nil {
		r.opt.Written.Add(ServersDir + "/")
	}
}

// startArm starts the server of one arm: it picks the kind the config
// names and hands it what it needs of the arm and the run. A launched or
// endpoint server sets the model requests name (r.model).
func (r *runner) startArm(ctx context.Context, arm ArmConfig) (servers.Server, error) {
	dir := filepath.Join(r.opt.OutDir, ServersDir, arm.Name)
	switch r.cfg.Server.Kind {
	case servers.Sim:
		return servers.StartSim(ctx, r.simStartConfig(arm), r.cfg.Amdahl.TargetOp, func(t servers.SimTrueFraction) {
			appendServerRecord(r, arm.Name, trueFractionsKey, t)
		})
	case servers.Reference:
		ra := servers.ReferenceArm{Name: arm.Name, Dir: dir, Override: arm.Override, Ceiling: arm.IsCeiling(), Idle: r.cfg.Energy.Idle}
		if p := r.cfg.Amdahl.Profile; p != nil {
			if err := p.Validate(); err != nil {
				return nil, err
			}
			pc := p.effective()
			baseline := arm.Name == r.cfg.Arms[0].Name
			ra.Pass = func(srv *servers.ReferenceServer, cell report.CellKey) (*amdahl.Fractions, error) {
				if !baseline {
					return nil, nil
				}
				return r.profilePass(ctx, srv, arm, &pc, cell)
			}
		}
		s, err := r.launcher.StartReference(ctx, *r.cfg.Server.Reference, ra)
		r.wroteServerDir(dir)
		if err != nil {
			return nil, err
		}
		r.model = r.cfg.Request.Model
		return s, nil
	case servers.Command:
		cmd := *r.live.command
		if cmd.Cwd != "" {
			cmd.Cwd = r.cfg.path(cmd.Cwd)
		}
		p := newProber(&r.cfg, r.live)
		defer p.Close()
		s, err := r.launcher.StartCommand(ctx, cmd, servers.CommandArm{Name: arm.Name, Dir: dir, Override: arm.Override}, p, r.cfg.Request.Model)
		r.wroteServerDir(dir)
		if err != nil {
			return nil, err
		}
		r.model = s.Model()
		return s, nil
	case servers.Endpoint:
		t, ok := r.endpoints[r.cfg.armURL(arm)]
		if !ok {
			return nil, fmt.Errorf("arm %s: no endpoint probed", arm.Name)
		}
		var pins map[string]any
		if e := r.cfg.Server.Endpoint; e != nil {
			pins = e.Pins
		}
		s, err := servers.StartEndpoint(ctx, t, pins, newProber(&r.cfg, r.live), r.cfg.Energy.Device)
		if err != nil {
			return nil, err
		}
		r.model = s.Model()
		return s, nil
	default:
		return nil, fmt.Errorf("server kind %q: %w", r.cfg.Server.Kind, servers.ErrNoKind)
	}
}

// simConfig is the simulator's configuration for arm: the config's
// server.sim (or the default) with the arm's op overrides.
func (r *runner) simConfig(arm ArmConfig) sim.Config {
	cfg := sim.DefaultConfig()
	if r.cfg.Server.Sim != nil {
		cfg = r.cfg.Server.Sim.Config
	}
	cfg.Overrides = map[string]float64{}
	cfg.Ceilings = nil
	for op, f := range arm.SimOverrides {
		if f.IsCeiling() {
			cfg.Ceilings = append(cfg.Ceilings, op)
			continue
		}
		cfg.Overrides[op] = f.Factor
	}
	return cfg
}

// simStartConfig is the simulator's configuration for arm's next start
// (simConfig), with the noise model on, its noise seed that start's own
// (noiseSeed); it counts the start. The virtual-time replay of a run
// (sim.NoisyServer) takes its configuration from here too, so it draws the
// noise the real run's servers draw.
//
// During the sweep (runAll) a start belongs to its stretch of consecutive
// cells of one arm: it takes the stretch's ordinal among the arm's stretches
// and passes over the run factors of the stretch's cells before the one it
// starts for, so a resumed run, which starts a server where the original
// reused one (its earlier cells kept), draws for every cell the noise the
// uninterrupted run drew (without this its new cells replayed the kept
// cells' draws, and the A/A replicate agreed with itself falsely).
func (r *runner) simStartConfig(arm ArmConfig) sim.Config {
	cfg := r.simConfig(arm)
	if cfg.Noise.On() {
		if r.simStarts == nil {
			r.simStarts = map[string]int{}
		}
		start, skip := r.simStarts[arm.Name], 0
		if s, ok := r.stretch[arm.Name]; ok {
			start, skip = s, r.stretchPos
		} else {
			r.simStarts[arm.Name]++
		}
		cfg.Noise.Seed = noiseSeed(r.cfg.Seed, cfg.Noise.Seed, arm.Name, start)
		cfg.Noise.SkipRunDraws = skip
	}
	return cfg
}

// beginStretch counts a stretch of consecutive sweep cells of arm (one
// server start in an uninterrupted run), kept cells included.
func (r *runner) beginStretch(arm string) {
	if r.simStarts == nil {
		r.simStarts = map[string]int{}
	}
	if r.stretch == nil {
		r.stretch = map[string]int{}
	}
	r.stretch[arm] = r.simStarts[arm]
	r.simStarts[arm]++
}

// noiseSeed is the noise seed of arm's start-th simulator start (0-based):
// a hash of the run's seed, server.sim.noise.seed, the arm and start, so a
// run with the same config draws the same noise, every arm and start its
// own.
func noiseSeed(runSeed int64, seed uint64, arm string, start int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%d\x00%s\x00%d", runSeed, seed, arm, start)
	return h.Sum64()
}

// trueFractionsKey names the simulator's true fractions in a sim arm's
// manifest (manifest.server.<arm>.true_fractions).
const trueFractionsKey = "true_fractions"

// addServerInfo keeps each arm's server manifest (versions, config, hook
// receipts) in the results manifest.
func (r *runner) addServerInfo(ctx context.Context, arm string, srv servers.Server) {
	if r.res.Manifest.Server == nil {
		r.res.Manifest.Server = map[string]any{}
	}
	if _, ok := r.res.Manifest.Server[arm]; !ok {
		r.res.Manifest.Server[arm] = srv.Info(ctx)
	}
}

// appendServerRecord appends rec to the list under
// manifest.server.<arm>.<key> in the results.
func appendServerRecord[T any](r *runner, arm, key string, rec T) {
	m := r.res.Manifest.Server
	if m == nil {
		m = map[string]any{}
		r.res.Manifest.Server = m
	}
	info, _ := m[arm].(map[string]any)
	if info == nil {
		info = map[string]any{}
		m[arm] = info
	}
	recs, _ := info[key].([]T)
	info[key] = append(recs, rec)
}

// Preflight checks, before anything is measured or written, that the
// machine can run the configured server (servers.Preflight): for
// server.kind reference, that the reference interpreter imports torch,
// transformers and aiohttp and that torch sees a GPU. Other kinds: nil.
func Preflight(ctx context.Context, cfg *Config) error {
	return servers.Preflight(ctx, cfg.Server.Kind, cfg.Server.Reference)
}
