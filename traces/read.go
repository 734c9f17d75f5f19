package traces

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ReasonMissingField marks a JSONL row that lacks a required key.
const ReasonMissingField = "missing_field"

// DroppedBurstGPTFailed keys Schedule.Dropped for BurstGPT failed requests.
const DroppedBurstGPTFailed = "burstgpt_failed"

// ReadOptions controls ReadFile, Read and Parse. The zero value detects the
// format from the header, fails on the first bad row and drops BurstGPT
// failed requests.
type ReadOptions struct {
	// Format forces a reader: one of FormatNames(). "" detects it from the
	// header (CSV column names or the first JSONL object's keys, never
	// positions); with a Mapping, "" means generic CSV or JSONL by content.
	Format string
	// Lenient skips bad rows, counting them in Schedule.Skipped and
	// Schedule.SkippedByReason, instead of failing on the first one. Default false.
	Lenient bool
	// Mapping names the columns of a generic CSV/JSONL trace (required for
	// formats "csv" and "jsonl"; ignored by the built-in formats).
	Mapping *Mapping
	// KeepFailed keeps BurstGPT failed requests (zero response tokens) as
	// arrivals with OutputTokens = 1 (they did load the server's prefill);
	// one logged with zero request tokens too is kept with InputTokens = 1,
	// the smallest prompt a server accepts.
	// Default false: they are dropped and counted in Schedule.Dropped["burstgpt_failed"].
	KeepFailed bool
}

// ReadFile reads a trace file; see Parse for what it accepts and returns.
func ReadFile(path string, opts ReadOptions) (Schedule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Schedule{}, fmt.Errorf("traces: %w", err)
	}
	return Parse(data, path, opts)
}

// Read reads a whole trace from r; name is used in Source and in errors.
func Read(r io.Reader, name string, opts ReadOptions) (Schedule, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Schedule{}, fmt.Errorf("traces: %s: %w", name, err)
	}
	return Parse(data, name, opts)
}

// Parse normalises the bytes of one trace file into a Schedule.
//
// Handled on purpose: a UTF-8 BOM; CRLF or LF line endings; no final newline;
// blank lines before the header and after the last row (skipped; line
// numbers still count them); header names
// matched by normalised name in any order, extra columns ignored; absolute
// datetimes (offsets from the earliest row) or relative times in s/ms/us/ns
// (offsets from the earliest row, so a trace that starts at t=1178625 ms
// starts at 0); duplicate timestamps kept in file order (a burst is the
// recorded shape); unsorted rows sorted stably by time and counted in
// Schedule.Reordered; huge token counts kept (see ClampContext).
//
// Rejected rows (an error naming file, line and field, or in lenient mode
// skipped and counted by reason): wrong field count, unparsable or negative
// time, token counts that are not non-negative integers, a blank line
// between a CSV's header and its last row (a hole in the data: a lost row or
// files pasted together; JSONL skips blank lines), zero input or
// output tokens (a request needs ≥ 1 of each), malformed JSON or hash_ids.
// BurstGPT rows with zero response tokens are failed requests, not bad rows:
// see ReadOptions.KeepFailed. A file with no usable request is an error.
func Parse(data []byte, name string, opts ReadOptions) (Schedule, error) {
	sum := sha256.Sum256(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		var err error
		if data, err = gunzip(data); err != nil {
			return Schedule{}, fmt.Errorf("traces: %s: gzip: %w", name, err)
		}
	}
	p := parser{name: name, opts: opts, lines: lineIter{data: bytes.TrimPrefix(data, []byte("\ufeff"))}}
	first, firstNo, ok := p.lines.next()
	if !ok {
		return Schedule{}, fmt.Errorf("traces: %s: empty file", name)
	}
	if i := binaryAt(first); i >= 0 {
		return Schedule{}, fmt.Errorf("traces: %s line %d: not a text trace (byte %d of the line is %#02x): want CSV or JSONL, optionally gzip-compressed", name, firstNo, i+1, first[i])
	}
	jsonl := bytes.TrimSpace(first)[0] == '{'
	var err error
	if jsonl {
		err = p.readJSONL(first, firstNo)
	} else {
		err = p.readCSV(first, firstNo)
	}
	if err != nil {
		return Schedule{}, err
	}
	if len(p.reqs) == 0 {
		return Schedule{}, fmt.Errorf("traces: %s: no usable requests (%d bad rows skipped, %d dropped)", name, p.skipped, sumCounts(p.dropped))
	}
	s := Schedule{
		Source: name, Format: p.f.name, Requests: p.reqs, RowsRead: p.rowsRead, Skipped: p.skipped, SkippedLines: p.skippedLines,
		SHA256: hex.EncodeToString(sum[:]), PrefixBlockTokens: p.blockToks,
	}
	if len(p.reasons) > 0 {
		s.SkippedByReason = p.reasons
	}
	if len(p.dropped) > 0 {
		s.Dropped = p.dropped
	}
	var t0 int64
	s.Reordered, s.FirstBackstep, t0 = normalise(s.Requests)
	if p.f.timeUnit == UnitDatetime {
		s.Start = time.Unix(0, t0).UTC().Format(time.RFC3339Nano)
	} else {
		s.Start = time.Duration(t0).String()
	}
	return s, nil
}

// binaryAt is the index of the first byte of line that no text trace
// holds (NUL, another C0 control but tab, or invalid UTF-8), else -1.
func binaryAt(line []byte) int {
	for i := 0; i < len(line); {
		r, n := utf8.DecodeRune(line[i:])
		if (r == utf8.RuneError && n == 1) || (r < 0x20 && r != '\t' && r != '\r') || r == 0x7f {
			return i
		}
		i += n
	}
	return -1
}

// quoteName renders a header name for a message: as written when it is
// short printable text without commas or quotes, else Go-quoted (control
// and invalid bytes escaped) and cut to 40 bytes.
func quoteName(s string) string {
	const most = 40
	if len(s) > most {
		return strconv.Quote(strings.ToValidUTF8(s[:most], "")) + "…"
	}
	if s == "" || strings.ContainsAny(s, `,"'`) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	return s
}

// quoteNames lists header names for a message: each quoted (quoteName),
// at most 12 of them.
func quoteNames(names []string) string {
	const most = 12
	q := make([]string, 0, min(len(names), most))
	for _, n := range names[:min(len(names), most)] {
		q = append(q, quoteName(n))
	}
	if len(names) > most {
		q = append(q, fmt.Sprintf("… %d more", len(names)-most))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// maxGunzipBytes bounds a decompressed trace (a guard against gzip bombs).
const maxGunzipBytes = 8 << 30

// gunzip decompresses a whole .gz trace (Azure's 2025 multimodal trace ships as .csv.gz).
func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxGunzipBytes+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxGunzipBytes {
		return nil, fmt.Errorf("decompresses to more than %d bytes", maxGunzipBytes)
	}
	return out, nil
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// normalise turns raw times (held in Offset) into offsets from the earliest
// one, sorting stably when needed, assigns IDs 0..n-1 and returns how many
// rows were out of order, the first of them (nil for none) and the earliest
// raw time (ns).
func normalise(reqs []Request) (int, *Backstep, int64) {
	reordered := 0
	var first *Backstep
	maxT, maxLine := int64(math.MinInt64), 0
	for i := range reqs {
		t := int64(reqs[i].Offset)
		if t < maxT {
			reordered++
			if first == nil {
				first = &Backstep{Line: reqs[i].SourceLine, AfterLine: maxLine, By: time.Duration(maxT - t)}
			}
		} else {
			maxT, maxLine = t, reqs[i].SourceLine
		}
	}
	if reordered > 0 {
		slices.SortStableFunc(reqs, func(a, b Request) int {
			switch {
			case a.Offset < b.Offset:
				return -1
			case a.Offset > b.Offset:
				return 1
			}
			return 0
		})
	}
	t0 := reqs[0].Offset
	for i := range reqs {
		reqs[i].Offset -= t0
		reqs[i].ID = i
	}
	return reordered, first, int64(t0)
}

// lineIter yields non-blank lines with their 1-based numbers, without the
// line ending (LF or CRLF); blanks holds the numbers of the blank lines
// (empty or white space only) skipped just before the last line yielded.
type lineIter struct {
	data   []byte
	pos    int
	no     int
	blanks []int
}

func (it *lineIter) next() ([]byte, int, bool) {
	it.blanks = it.blanks[:0]
	for it.pos < len(it.data) {
		rest := it.data[it.pos:]
		end := bytes.IndexByte(rest, '\n')
		var line []byte
		if end < 0 {
			line, it.pos = rest, len(it.data)
		} else {
			line, it.pos = rest[:end], it.pos+end+1
		}
		it.no++
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			it.blanks = append(it.blanks, it.no)
			continue
		}
		return line, it.no, true
	}
	return nil, 0, false
}

// parser holds one Parse call's state.
type parser struct {
	name      string
	opts      ReadOptions
	lines     lineIter
	f         format
	blockToks int
	reqs      []Request
	rowsRead  int
	skipped   int
	// skippedLines holds the first MaxSkippedLines skipped lines.
	skippedLines []int
	reasons      map[string]int
	dropped      map[string]int
}

// bad handles one bad row: an error in strict mode, a count in lenient mode.
func (p *parser) bad(line int, field, reason string, err error) error {
	if !p.opts.Lenient {
		return &RowError{File: p.name, Line: line, Field: field, Reason: reason, Err: err}
	}
	p.skipped++
	if len(p.skippedLines) < MaxSkippedLines {
		p.skippedLines = append(p.skippedLines, line)
	}
	if p.reasons == nil {
		p.reasons = map[string]int{}
	}
	p.reasons[reason]++
	return nil
}

func (p *parser) drop(reason string) {
	if p.dropped == nil {
		p.dropped = map[string]int{}
	}
	p.dropped[reason]++
}

// choose picks the format from options and the header's normalised columns.
// names are the columns as written, for messages.
func (p *parser) choose(cols, names []string, jsonl bool, headerLine int) error {
	kind := "CSV"
	if jsonl {
		kind = "JSONL"
	}
	switch p.opts.Format {
	case "":
		if p.opts.Mapping != nil {
			return p.useMapping(jsonl)
		}
		f, err := detect(cols, jsonl)
		if err != nil {
			return fmt.Errorf("traces: %s line %d: %s columns %s match no known format (%s; or give a column mapping): %w",
				p.name, headerLine, kind, quoteNames(names), strings.Join(FormatNames(), ", "), err)
		}
		p.f = f
		return nil
	case FormatGenericCSV, FormatGenericJSONL:
		if p.opts.Mapping == nil {
			return fmt.Errorf("traces: %s: format %q needs a column mapping", p.name, p.opts.Format)
		}
		if (p.opts.Format == FormatGenericJSONL) != jsonl {
			return fmt.Errorf("traces: %s line %d: format %q forced but the file is %s", p.name, headerLine, p.opts.Format, kind)
		}
		return p.useMapping(jsonl)
	}
	f, ok := byName(p.opts.Format)
	if !ok {
		return fmt.Errorf("traces: %s: format %q (want one of %s): %w", p.name, p.opts.Format, strings.Join(FormatNames(), ", "), ErrUnknownFormat)
	}
	if f.jsonl != jsonl {
		return fmt.Errorf("traces: %s line %d: format %q forced but the file is %s", p.name, headerLine, f.name, kind)
	}
	p.f = f
	return nil
}

// useMapping selects the generic format described by opts.Mapping.
func (p *parser) useMapping(jsonl bool) error {
	f, err := fromMapping(p.opts.Mapping, jsonl)
	if err != nil {
		return fmt.Errorf("traces: %s: %w", p.name, err)
	}
	p.f = f
	return nil
}

// timeNs parses a time field in the format's unit: Unix ns for datetimes,
// ns from the trace's origin otherwise. Negative times are rejected.
func (p *parser) timeNs(b []byte) (int64, error) {
	var t int64
	var err error
	if p.f.timeUnit == UnitDatetime {
		t, err = parseDatetimeNs(b)
	} else {
		d, _ := unitDigits(p.f.timeUnit)
		t, err = parseDecimalNs(b, d)
	}
	if err != nil {
		return 0, err
	}
	if t < 0 {
		return 0, fmt.Errorf("%q is negative (times before the origin, or before 1970 for datetimes, are not accepted)", b)
	}
	return t, nil
}

// add validates one row's parsed values and appends it (or drops it).
// inField/outField are the header names for error messages.
func (p *parser) add(line int, t int64, in, out int, inField, outField string, r Request) error {
	if p.f.burstGPT && out == 0 {
		if !p.opts.KeepFailed {
			p.drop(DroppedBurstGPTFailed)
			return nil
		}
		in, out = max(in, 1), 1
	}
	if in == 0 {
		return p.bad(line, inField, ReasonZeroTokens, errors.New("0 input tokens: a request needs ≥ 1"))
	}
	if out == 0 {
		return p.bad(line, outField, ReasonZeroTokens, errors.New("0 output tokens: a request needs ≥ 1"))
	}
	r.Offset = timeDuration(t)
	r.InputTokens, r.OutputTokens, r.SourceLine = in, out, line
	p.reqs = append(p.reqs, r)
	return nil
}

// readCSV reads a CSV trace whose header is line headerNo.
func (p *parser) readCSV(header []byte, headerNo int) error {
	raw, err := splitCSV(header, nil)
	if err != nil {
		return fmt.Errorf("traces: %s line %d: header: %w", p.name, headerNo, err)
	}
	names := make([]string, len(raw))
	cols := make([]string, len(raw))
	for i, c := range raw {
		names[i] = strings.Trim(strings.TrimSpace(string(c)), `"'`)
		cols[i] = normName(names[i])
		if j := slices.Index(cols[:i], cols[i]); j >= 0 && cols[i] != "" {
			return fmt.Errorf("traces: %s line %d: header: columns %d and %d are both %s", p.name, headerNo, j+1, i+1, quoteName(names[i]))
		}
	}
	if err := p.choose(cols, names, false, headerNo); err != nil {
		return err
	}
	idx := func(col string) (int, error) {
		i := slices.Index(cols, col)
		if i < 0 && col != "" {
			return -1, fmt.Errorf("traces: %s line %d: format %s needs a column %q; header has %s", p.name, headerNo, p.f.name, col, quoteNames(names))
		}
		return i, nil
	}
	ti, err := idx(p.f.time)
	if err != nil {
		return err
	}
	ii, err := idx(p.f.input)
	if err != nil {
		return err
	}
	oi, err := idx(p.f.output)
	if err != nil {
		return err
	}
	pi := slices.Index(cols, p.f.prefix)
	if p.f.prefix == "" {
		pi = -1
	}
	p.reqs = make([]Request, 0, bytes.Count(p.lines.data, []byte{'\n'})+1)
	var fields [][]byte
	for {
		line, no, ok := p.lines.next()
		if !ok {
			return nil // blank lines after the last row are harmless
		}
		for _, b := range p.lines.blanks {
			// A blank line with a row after it: a hole in the data (a lost
			// row, files pasted together) rather than layout.
			p.rowsRead++
			if err := p.bad(b, "", ReasonBlankLine, errors.New("blank line between data rows (blank lines are allowed only before the header and after the last row)")); err != nil {
				return err
			}
		}
		p.rowsRead++
		fields, err = splitCSV(line, fields[:0])
		if err != nil {
			if err := p.bad(no, "", ReasonFieldCount, err); err != nil {
				return err
			}
			continue
		}
		if len(fields) != len(cols) {
			if err := p.bad(no, "", ReasonFieldCount, fmt.Errorf("%d fields, header has %d", len(fields), len(cols))); err != nil {
				return err
			}
			continue
		}
		t, err := p.timeNs(fields[ti])
		if err != nil {
			if err := p.bad(no, names[ti], ReasonBadTime, err); err != nil {
				return err
			}
			continue
		}
		in, err := parseInt(fields[ii])
		if err != nil {
			if err := p.bad(no, names[ii], ReasonBadTokens, err); err != nil {
				return err
			}
			continue
		}
		out, err := parseInt(fields[oi])
		if err != nil {
			if err := p.bad(no, names[oi], ReasonBadTokens, err); err != nil {
				return err
			}
			continue
		}
		var r Request
		if pi >= 0 {
			r.PrefixGroup = string(fields[pi])
		}
		if err := p.add(no, t, in, out, names[ii], names[oi], r); err != nil {
			return err
		}
	}
}

// splitCSV splits one CSV line into trimmed fields, appending to dst. Lines
// with a double quote go through encoding/csv (RFC 4180 quoting); others
// are split on commas without allocating.
func splitCSV(line []byte, dst [][]byte) ([][]byte, error) {
	if bytes.IndexByte(line, '"') >= 0 {
		rec, err := csv.NewReader(bytes.NewReader(line)).Read()
		if err != nil {
			return dst, fmt.Errorf("CSV quoting: %w", err)
		}
		for _, f := range rec {
			dst = append(dst, bytes.TrimSpace([]byte(f)))
		}
		return dst, nil
	}
	for {
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			return append(dst, bytes.TrimSpace(line)), nil
		}
		dst = append(dst, bytes.TrimSpace(line[:i]))
		line = line[i+1:]
	}
}

// readJSONL reads a JSONL trace; the first object's keys pick the format.
// In lenient mode, leading lines that are not JSON objects are skipped
// (counted as bad_json) until one can name the format.
func (p *parser) readJSONL(first []byte, firstNo int) error {
	var obj map[string]json.RawMessage
	for {
		p.rowsRead++
		err := json.Unmarshal(first, &obj)
		if err == nil {
			break
		}
		if !p.opts.Lenient {
			return &RowError{File: p.name, Line: firstNo, Reason: ReasonBadJSON, Err: fmt.Errorf("first JSONL object: %w", err)}
		}
		_ = p.bad(firstNo, "", ReasonBadJSON, err)
		var ok bool
		if first, firstNo, ok = p.lines.next(); !ok {
			return fmt.Errorf("traces: %s: no JSON object to detect the format from (%d bad lines)", p.name, p.skipped)
		}
	}
	names := slices.Sorted(maps.Keys(obj))
	cols := make([]string, len(names))
	for i, k := range names {
		cols[i] = normName(k)
	}
	if err := p.choose(cols, names, true, firstNo); err != nil {
		return err
	}
	p.blockToks = p.f.blockToks
	p.reqs = make([]Request, 0, bytes.Count(p.lines.data, []byte{'\n'})+1)
	line, no := first, firstNo
	for {
		if err := p.jsonRow(line, no); err != nil {
			return err
		}
		var ok bool
		if line, no, ok = p.lines.next(); !ok {
			return nil
		}
		p.rowsRead++
	}
}

// jsonRow parses one JSONL object.
func (p *parser) jsonRow(line []byte, no int) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return p.bad(no, "", ReasonBadJSON, err)
	}
	vals := make(map[string]json.RawMessage, len(obj))
	keys := make(map[string]string, len(obj))
	for k, v := range obj {
		vals[normName(k)] = v
		keys[normName(k)] = k
	}
	get := func(col string) ([]byte, string, error) {
		v, ok := vals[col]
		if !ok {
			return nil, col, fmt.Errorf("missing key (format %s)", p.f.name)
		}
		return bytes.TrimSpace(v), keys[col], nil
	}
	tv, tk, err := get(p.f.time)
	if err != nil {
		return p.bad(no, tk, ReasonMissingField, err)
	}
	if len(tv) > 0 && tv[0] == '"' {
		var s string
		if err := json.Unmarshal(tv, &s); err != nil {
			return p.bad(no, tk, ReasonBadTime, err)
		}
		tv = []byte(strings.TrimSpace(s))
	}
	t, err := p.timeNs(tv)
	if err != nil {
		return p.bad(no, tk, ReasonBadTime, err)
	}
	iv, ik, err := get(p.f.input)
	if err != nil {
		return p.bad(no, ik, ReasonMissingField, err)
	}
	in, err := parseInt(iv)
	if err != nil {
		return p.bad(no, ik, ReasonBadTokens, err)
	}
	ov, ok, err := get(p.f.output)
	if err != nil {
		return p.bad(no, ok, ReasonMissingField, err)
	}
	out, err := parseInt(ov)
	if err != nil {
		return p.bad(no, ok, ReasonBadTokens, err)
	}
	var r Request
	if p.f.prefix != "" {
		if pv, pk, err := get(p.f.prefix); err == nil {
			if r, err = prefixFrom(pv); err != nil {
				return p.bad(no, pk, ReasonBadPrefix, err)
			}
		}
	}
	return p.add(no, t, in, out, ik, ok, r)
}

// prefixFrom reads a prefix value: an array of integer block ids (hash_ids,
// group = "h<first id>", ids in PrefixBlocks) or a scalar (group = its text); null means none.
func prefixFrom(v []byte) (Request, error) {
	var r Request
	switch {
	case len(v) == 0 || string(v) == "null":
		return r, nil
	case v[0] == '[':
		var ids []int64
		if err := json.Unmarshal(v, &ids); err != nil {
			return r, fmt.Errorf("want an array of integer block ids: %w", err)
		}
		if len(ids) > 0 {
			r.PrefixGroup = "h" + strconv.FormatInt(ids[0], 10)
			b := make([]byte, 0, len(ids)*6)
			for i, id := range ids {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, id, 10)
			}
			r.PrefixBlocks = string(b)
		}
	case v[0] == '"':
		if err := json.Unmarshal(v, &r.PrefixGroup); err != nil {
			return r, err
		}
	default:
		r.PrefixGroup = string(v)
	}
	return r, nil
}
