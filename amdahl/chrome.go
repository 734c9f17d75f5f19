package amdahl

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// ReadChrome reads a PyTorch profiler (Kineto) Chrome-trace JSON file; see
// ParseChrome.
func ReadChrome(path string, opts ...Option) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("amdahl: chrome trace: %w", err)
	}
	defer f.Close()
	return ParseChrome(f, path, opts...)
}

type chromeEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur"`
	Pid  json.RawMessage `json:"pid"`
	Tid  json.RawMessage `json:"tid"`
	Args chromeArgs      `json:"args"`
}

// chromeArgs are the event arguments the reader uses, kept raw (a number or
// a numeric string) and parsed on use; other arguments are skipped unread.
type chromeArgs struct {
	Device      json.RawMessage `json:"device"`
	Stream      json.RawMessage `json:"stream"`
	Correlation json.RawMessage `json:"correlation"`
	ExternalID  json.RawMessage `json:"External id"`
	GraphID     json.RawMessage `json:"graph id"`
	GraphNodeID json.RawMessage `json:"graph node id"`
}

type chromeFile struct {
	TraceEvents []chromeEvent `json:"traceEvents"`
	BaseTimeNs  json.Number   `json:"baseTimeNanoseconds"`
}

// ParseChrome reads a Chrome-trace JSON (an object with "traceEvents", or a
// bare array of events; gzip-compressed or not) as PyTorch's profiler writes it. Only complete events
// (ph "X", ts and dur in µs) are used:
//
//   - GPU work: cat "kernel", "gpu_memcpy", "gpu_memset"; device from
//     args.device (else pid), stream from args.stream (else tid); args
//     "graph id" / "graph node id" mark a CUDA-graph replay;
//   - runtime calls (cat "cuda_runtime"/"cuda_driver") with args.correlation
//     link kernels to their launching thread; cudaGraphLaunch marks replays;
//   - "user_annotation" ranges (record_function, CPU side), "gpu_user_annotation"
//     ranges (the same ranges projected on the GPU stream), and "cpu_op" events
//     with args["External id"].
//
// Attribution and phases follow the rules of the options (TargetAnnotation,
// KernelPattern, PhaseAnnotation). name is used in errors, which name the
// event index and the field; a JSON syntax error names the line.
func ParseChrome(r io.Reader, name string, opts ...Option) (*Profile, error) {
	data, err := readMaybeGzip(r)
	if err != nil {
		return nil, fmt.Errorf("amdahl: chrome trace %s: %w", name, err)
	}
	var cf chromeFile
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		err = json.Unmarshal(data, &cf.TraceEvents)
	} else {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		err = d.Decode(&cf)
		if err == nil && cf.TraceEvents == nil {
			err = errors.New(`no "traceEvents" array`)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("amdahl: chrome trace %s%s: %w", name, jsonErrLine(data, err), err)
	}
	tl := timeline{launches: map[int64]launchEv{}}
	for i, ev := range cf.TraceEvents {
		if ev.Ph != "X" {
			continue
		}
		where := func(field string) string {
			return fmt.Sprintf("amdahl: chrome trace %s: traceEvents[%d] (%q, cat %q): field %s", name, i, ev.Name, ev.Cat, field)
		}
		if ev.Ts == "" || ev.Dur == "" {
			return nil, fmt.Errorf("%s: complete event without ts/dur", where("ts/dur"))
		}
		ts, err := usToDur(ev.Ts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where("ts"), err)
		}
		dur, err := usToDur(ev.Dur)
		if err != nil || dur < 0 {
			return nil, fmt.Errorf("%s: invalid duration %s µs", where("dur"), ev.Dur)
		}
		iv := Interval{ts, ts + dur}
		thread := string(ev.Pid) + "/" + string(ev.Tid)
		corr, hasCorr := rawInt(ev.Args.Correlation)
		ext, hasExt := rawInt(ev.Args.ExternalID)
		switch cat := strings.ToLower(ev.Cat); cat {
		case "kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset":
			dev, err := numField(ev.Args.Device, ev.Pid)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where("args.device/pid"), err)
			}
			stream, err := numField(ev.Args.Stream, ev.Tid)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where("args.stream/tid"), err)
			}
			kind := strings.TrimPrefix(cat, "gpu_")
			tl.kernels = append(tl.kernels, rawKernel{
				k:    Kernel{Name: ev.Name, Kind: kind, Device: dev, Stream: stream, Start: iv.Start, End: iv.End},
				corr: corr, hasCorr: hasCorr, ext: ext, hasExt: hasExt,
				graph: len(ev.Args.GraphNodeID) > 0 || len(ev.Args.GraphID) > 0,
			})
		case "cuda_runtime", "cuda_driver", "runtime":
			if hasCorr {
				tl.launches[corr] = launchEv{thread: thread, at: iv.Start, name: ev.Name}
			}
		case "user_annotation":
			tl.cpuRanges = append(tl.cpuRanges, cpuRange{name: ev.Name, thread: thread, iv: iv, ext: ext, hasExt: hasExt})
		case "gpu_user_annotation":
			dev, err := numField(ev.Args.Device, ev.Pid)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where("args.device/pid"), err)
			}
			stream, err := numField(ev.Args.Stream, ev.Tid)
			if err != nil {
				stream = anyStream
			}
			tl.gpuRanges = append(tl.gpuRanges, gpuRange{name: ev.Name, device: dev, stream: stream, iv: iv})
		case "cpu_op", "operator":
			if hasExt {
				tl.cpuOps = append(tl.cpuOps, cpuRange{name: ev.Name, thread: thread, iv: iv, ext: ext, hasExt: true})
			}
		}
	}
	p, err := attribute(tl, newAttrConfig(opts), "chrome", name)
	if err != nil {
		return nil, err
	}
	if len(tl.cpuRanges) == 0 && len(tl.cpuOps) == 0 && len(tl.launches) > 0 {
		p.Warnings = append(p.Warnings, "the trace has runtime calls but no cpu_op or user_annotation events: CPU ops (and record_function ranges) of the launching thread were not recorded — was the profiler started from another thread?")
	}
	if cf.BaseTimeNs != "" {
		if b, err := cf.BaseTimeNs.Int64(); err == nil {
			p.UnixBaseNs, p.UnixBaseKnown = b, true
		}
	}
	return p, nil
}

// usToDur converts a decimal µs literal to ns exactly (rounding half away
// from zero at the fourth decimal): float64 has only ~16 significant digits,
// which at epoch-µs timestamps (~1.7e15) would leave a 0.25 µs grain — 5 %
// of a 5 µs kernel. Literals with an exponent go through float64.
func usToDur(n json.Number) (time.Duration, error) {
	lit := string(n)
	if strings.ContainsAny(lit, "eE") {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%q is not a time in µs", lit)
		}
		return time.Duration(math.Round(f * 1e3)), nil
	}
	neg := strings.HasPrefix(lit, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(lit, "-"), ".")
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/1000-1 {
		return 0, fmt.Errorf("%q is not a time in µs", lit)
	}
	ns := w * 1000
	for i := 0; i < 3; i++ {
		d := int64(0)
		if i < len(frac) {
			if frac[i] < '0' || frac[i] > '9' {
				return 0, fmt.Errorf("%q is not a time in µs", lit)
			}
			d = int64(frac[i] - '0')
		}
		ns += d * [3]int64{100, 10, 1}[i]
	}
	if len(frac) > 3 && frac[3] >= '5' {
		ns++
	}
	if neg {
		ns = -ns
	}
	return time.Duration(ns), nil
}

// rawInt reads an integer argument: a JSON number or a numeric string.
func rawInt(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	str := strings.Trim(string(raw), `"`)
	if n, err := strconv.ParseInt(str, 10, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(str, 64); err == nil && f == math.Trunc(f) {
		return int64(f), true
	}
	return 0, false
}

// numField reads arg as an integer, else the raw pid/tid value: a number, or
// a string whose last space-separated word is one ("stream 7").
func numField(arg, raw json.RawMessage) (int64, error) {
	if n, ok := rawInt(arg); ok {
		return n, nil
	}
	s := strings.Trim(string(raw), `"`)
	if i := strings.LastIndexByte(s, ' '); i >= 0 {
		s = s[i+1:]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("no integer in args (%s) or in %s", arg, raw)
	}
	return n, nil
}

// jsonErrLine turns a JSON decoding error's byte offset into " line N".
func jsonErrLine(data []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return ""
	}
	return fmt.Sprintf(" line %d", bytes.Count(data[:off], []byte("\n"))+1)
}

// readMaybeGzip reads all of r, decompressing it when it starts with the gzip magic.
func readMaybeGzip(r io.Reader) ([]byte, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		return io.ReadAll(zr)
	}
	return io.ReadAll(br)
}

// readHead returns up to n bytes from the start of r, decompressed if gzip.
func readHead(r io.Reader, n int64) ([]byte, error) {
	br := bufio.NewReader(r)
	var src io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		src = zr
	}
	head, err := io.ReadAll(io.LimitReader(src, n))
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return head, err
}
