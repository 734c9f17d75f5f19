package shard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/internal/outpath"
	"github.com/transferlab/transferlab/traces"
)

// ManifestFile is a shard's own record in its output folder.
const ManifestFile = "shard.json"

// ScheduleInfo fingerprints one offered load's unsplit schedule, so a merge
// can check every shard sliced the same one.
type ScheduleInfo struct {
	LoadIndex int `json:"load_index"`
	// Requests is the unsplit schedule's request count; its ids are the
	// ones the shards together must send.
	Requests int `json:"requests"`
	// IDs is the unsplit schedule's request ids in order.
	IDs []int `json:"ids"`
	// SpanNs is the last request's offset (ns).
	SpanNs time.Duration `json:"span_ns"`
	// SHA256 covers every request's id, offset and token counts.
	SHA256 string `json:"sha256"`
}

func fingerprint(load int, s traces.Schedule) ScheduleInfo {
	h := sha256.New()
	ids := make([]int, len(s.Requests))
	for i, r := range s.Requests {
		ids[i] = r.ID
		fmt.Fprintf(h, "%d %d %d %d %s\n", r.ID, int64(r.Offset), r.InputTokens, r.OutputTokens, r.PrefixBlocks)
	}
	info := ScheduleInfo{LoadIndex: load, Requests: len(s.Requests), IDs: ids, SHA256: hex.EncodeToString(h.Sum(nil))}
	if n := len(s.Requests); n > 0 {
		info.SpanNs = s.Requests[n-1].Offset
	}
	return info
}

// Manifest is shard.json: which shard this folder holds, of which run, and
// what it measured beyond its records.
type Manifest struct {
	Shard Spec `json:"shard"`
	// StartAt is the shared start time of the first cell (RFC 3339).
	StartAt time.Time `json:"start_at"`
	// GapNs is the timetable's gap between cells (ns).
	GapNs time.Duration `json:"gap_ns"`
	// ConfigPath and ConfigDir say where the config was read (relative paths
	// in it resolve against ConfigDir); Config is its text, SHA256 its hash.
	ConfigPath   string `json:"config_path"`
	ConfigDir    string `json:"config_dir"`
	Config       string `json:"config"`
	ConfigSHA256 string `json:"config_sha256"`
	// Schedules fingerprints the unsplit schedule of every offered load.
	Schedules []ScheduleInfo `json:"schedules"`
	Clock     Clock          `json:"clock"`
	// Cells says when each cell began against the timetable, in run order.
	Cells []CellStart `json:"cells"`
	// Measured holds what each cell measured beyond its records, run order.
	Measured []experiment.CellMeasured `json:"measured"`
	// Finished is true once the run returned and its results were written
	// (complete or not); a folder without it is from a shard that was killed.
	Finished bool `json:"finished"`
	// EndedEarly says why the shard ended without measuring every cell (the
	// incomplete run's reason: an interrupt, a deadline, a server that died);
	// "" while it runs and once it completed. A merge needs every shard, so
	// WaitFinished stops waiting at the first such mark.
	EndedEarly string `json:"ended_early,omitempty"`
	// Beats counts the heartbeats the running shard wrote (shard.json
	// rewritten every BeatEvery, from its first cell's wait to its end);
	// BeatAt is the last one's time by the shard's clock. A shard killed
	// outright (SIGKILL, out of memory, its node lost) writes no mark: its
	// beats stop, which WaitFinished notices on its own clock.
	Beats     int           `json:"beats,omitempty"`
	BeatAt    time.Time     `json:"beat_at,omitzero"`
	BeatEvery time.Duration `json:"beat_every_ns,omitempty"`
}

// DefaultHeartbeat is how often a running shard rewrites shard.json
// (Manifest.Beats); StaleBeats is how many periods without a beat make
// WaitFinished take an unfinished shard for dead.
const (
	DefaultHeartbeat = 10 * time.Second
	StaleBeats       = 6
)

// write saves m into dir atomically.
func (m *Manifest) write(dir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := outpath.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n')); err != nil {
		return fmt.Errorf("%s: %w", ManifestFile, err)
	}
	return nil
}

// readManifest reads dir's shard.json.
func readManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return m, nil
}
