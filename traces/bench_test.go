package traces

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// azureRows generates n Azure-2023-format rows (CRLF, 7-digit fractions,
// no zone, no final newline) 100 µs + i%997 × 1.3 µs apart.
func azureRows(n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 40)
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\r\n")
	t0 := time.Date(2023, 11, 16, 18, 15, 46, 680590000, time.UTC)
	t := t0
	for i := range n {
		t = t.Add(100*time.Microsecond + time.Duration(i%997)*1300*time.Nanosecond)
		fmt.Fprintf(&b, "%s%07d,%d,%d", t.Format("2006-01-02 15:04:05."), t.Nanosecond()/100, 1+i%8000, 1+i%1000)
		if i < n-1 {
			b.WriteString("\r\n")
		}
	}
	return b.Bytes()
}

func TestGeneratedAzureRowsParse(t *testing.T) {
	t.Parallel()
	s, err := Parse(azureRows(1000), "generated", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, s)
	if len(s.Requests) != 1000 || s.Requests[1].Offset != 100*time.Microsecond+1300*time.Nanosecond {
		t.Errorf("%d rows, second offset %v", len(s.Requests), s.Requests[1].Offset)
	}
}

// BenchmarkParseAzure1M parses 1,000,000 generated Azure rows held in memory
// (target: < 1 s and < 200 MB per parse; see B/op).
func BenchmarkParseAzure1M(b *testing.B) {
	data := azureRows(1_000_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := Parse(data, "generated", ReadOptions{})
		if err != nil || len(s.Requests) != 1_000_000 {
			b.Fatalf("%d rows, %v", len(s.Requests), err)
		}
	}
}

// BenchmarkReadFileAzure1M is the same from a file: B/op includes the file's bytes.
func BenchmarkReadFileAzure1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "azure_1m.csv")
	if err := os.WriteFile(path, azureRows(1_000_000), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := ReadFile(path, ReadOptions{})
		if err != nil || len(s.Requests) != 1_000_000 {
			b.Fatalf("%d rows, %v", len(s.Requests), err)
		}
	}
}

// BenchmarkComputeStats1M summarises a 1M-request schedule.
func BenchmarkComputeStats1M(b *testing.B) {
	s, err := Parse(azureRows(1_000_000), "generated", ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ComputeStats(s)
	}
}
