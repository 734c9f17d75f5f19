package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/transferlab/transferlab/telemetry"
)

// RunRequest is a run as `transferlab run` is asked for it, before anything
// is measured.
type RunRequest struct {
	// ConfigPath is the config file; empty with Resume: the config path the
	// resumed run recorded (ResumeConfigPath).
	ConfigPath string
	// Resume is the folder of an interrupted run to continue; "" for a new run.
	Resume string
	// Out is the output folder asked for (--out); OutGiven says it was given
	// at all, so an empty one is refused rather than defaulted.
	Out      string
	OutGiven bool
	// Overwrite replaces a run in Out, or writes beside other files (CheckOutDir).
	Overwrite bool
	// Sharded is a run of one shard (--shard), which a resumed run cannot be.
	Sharded bool
	// OTel is the --otel value overriding the config's otel section ("": none).
	OTel string
	// Now names the default output folder (DefaultOutDir).
	Now time.Time
	// Deadline stops the whole run after this long (--deadline; 0: none,
	// < 0 refused).
	Deadline time.Duration
}

// PreparedRun is a run checked before anything is measured: its config (read
// with CheckFiles), the config's bytes, the path it was read from, and the
// output folder it will write (checked by CheckOutDir).
type PreparedRun struct {
	Config     *Config
	Raw        []byte
	ConfigPath string
	OutDir     string
	Deadline   time.Duration
}

// Context is ctx, ended with the run deadline's passing as its cause when
// the run has one (RunRequest.Deadline).
func (p PreparedRun) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.Deadline <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, p.Deadline, fmt.Errorf("the run deadline (--deadline %s) passed", p.Deadline))
}

// PrepareRun reads and checks the run q asks for, in this order: the
// deadline (≥ 0); for a resume, that the run is not complete
// (CheckResumable, before anything is said on log); the config (for a
// resume without one, the path the run recorded, said on log), its files,
// the GPU software its server needs (Preflight: missing software fails
// here, before a server starts or a folder is made), the OTel override, and
// the output folder: q.Out, else for a resume the resumed folder, else the
// config's out, else DefaultOutDir(the config file's name without its
// extension, q.Now). Every error is bad input: nothing was measured.
func PrepareRun(ctx context.Context, q RunRequest, log io.Writer) (PreparedRun, error) {
	p := PreparedRun{ConfigPath: q.ConfigPath, Deadline: q.Deadline}
	if q.Deadline < 0 {
		return p, fmt.Errorf("--deadline %s: must be ≥ 0 (0: none)", q.Deadline)
	}
	if q.Resume != "" {
		if err := CheckResumable(q.Resume); err != nil {
			return p, err
		}
	}
	if p.ConfigPath == "" {
		path, err := ResumeConfigPath(q.Resume)
		if err != nil {
			return p, err
		}
		fmt.Fprintf(log, "resuming %s with the config it was started with: %s\n", q.Resume, path)
		p.ConfigPath = path
	}
	var err error
	if p.Config, p.Raw, err = Load(p.ConfigPath, CheckFiles()); err != nil {
		return p, err
	}
	if err := Preflight(ctx, p.Config); err != nil {
		return p, fmt.Errorf("config %s: %w", p.ConfigPath, err)
	}
	if q.OTel != "" {
		if p.Config.Extra.OTel, err = telemetry.ApplyFlag(p.Config.Extra.OTel, q.OTel); err != nil {
			return p, fmt.Errorf("--otel: %w", err)
		}
	}
	if p.OutDir, err = q.outDir(p.Config, p.ConfigPath); err != nil {
		return p, err
	}
	return p, CheckOutDir(p.OutDir, q.Overwrite, q.Resume != "")
}

// outDir is the output folder of q's run of cfg, read from path (PrepareRun).
func (q RunRequest) outDir(cfg *Config, path string) (string, error) {
	if q.OutGiven && q.Out == "" {
		return "", errors.New("--out: empty folder name")
	}
	switch {
	case q.Resume != "" && (q.Out != "" || q.Overwrite || q.Sharded):
		return "", errors.New("--resume: the resumed run writes into the folder it resumes: not with --out, --overwrite or --shard")
	case q.Resume != "":
		return q.Resume, nil
	case q.Out != "":
		return q.Out, nil
	case cfg.Out != "":
		return cfg.Out, nil
	}
	return DefaultOutDir(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), q.Now), nil
}
