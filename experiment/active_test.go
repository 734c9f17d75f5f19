package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/loadgen"
)

// TestActiveFromRecordsFile: overlapping requests count once, a request
// without an end counts to its last token event, one never sent or without
// any end counts nothing, and everything moves by the offset.
func TestActiveFromRecordsFile(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	recs := []loadgen.Record{
		{RequestID: 0, State: loadgen.StateOK, SentAt: 10 * ms, EndAt: 30 * ms},
		{RequestID: 1, State: loadgen.StateOK, SentAt: 20 * ms, EndAt: 40 * ms},
		{RequestID: 2, State: loadgen.StateTimeout, SentAt: 100 * ms, Events: []loadgen.TokenEvent{{At: 110 * ms, Tokens: 1}, {At: 130 * ms, Tokens: 1}}},
		{RequestID: 3, State: loadgen.StateNotSent},
		{RequestID: 4, State: loadgen.StateHTTPError, SentAt: 200 * ms},
	}
	path := filepath.Join(t.TempDir(), "records.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	sink := loadgen.NewJSONLSink(f)
	for i := range recs {
		if err := sink.Add(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ActiveFromRecordsFile(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []amdahl.Interval{{Start: time.Second + 10*ms, End: time.Second + 40*ms}, {Start: time.Second + 100*ms, End: time.Second + 130*ms}}
	if !slices.Equal(got, want) {
		t.Errorf("active = %v, want %v", got, want)
	}
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ActiveFromRecordsFile(empty, 0); err == nil || !strings.Contains(err.Error(), "no request") {
		t.Errorf("no records: %v, want 'no request'", err)
	}
}
