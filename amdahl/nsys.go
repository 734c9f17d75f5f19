package amdahl

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // pure-Go SQLite driver "sqlite": no cgo needed
)

// Nsight Systems export tables and the NVTX event types that are ranges
// (NvtxPushPopRange 59, NvtxStartEndRange 60), from the Nsight Systems user
// guide, "Exporter" / "SQLite schema reference".
const (
	nsysKernel  = "CUPTI_ACTIVITY_KIND_KERNEL"
	nsysMemcpy  = "CUPTI_ACTIVITY_KIND_MEMCPY"
	nsysMemset  = "CUPTI_ACTIVITY_KIND_MEMSET"
	nsysRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME"
	nsysNVTX    = "NVTX_EVENTS"
	nsysStrings = "StringIds"
	nsysSession = "TARGET_INFO_SESSION_START_TIME"
	nvtxPushPop = 59
	nvtxStartEn = 60
)

// ReadNsys reads an Nsight Systems SQLite export (`nsys export --type sqlite`)
// read-only. It reads sqlite_master first, since the schema drifts between
// versions, and needs only:
//
//   - CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, one of
//     demangledName / shortName / mangledName → StringIds(id, value));
//     correlationId, globalPid and graphNodeId are used when present;
//   - optionally CUPTI_ACTIVITY_KIND_MEMCPY / _MEMSET (start, end, deviceId,
//     streamId) as GPU work, CUPTI_ACTIVITY_KIND_RUNTIME (start, globalTid,
//     correlationId, nameId) to link kernels to launching threads and to
//     cudaGraphLaunch, NVTX_EVENTS push/pop and start/end ranges (text or
//     textId, globalTid) as CPU-side annotations, and
//     TARGET_INFO_SESSION_START_TIME(utcEpochNs) for the Unix base.
//
// Times are ns from the session start. Attribution follows the options as in
// ParseChrome; NVTX ranges are CPU-side only (the export has no GPU
// projection), so attribution goes through correlation ids. A kernel with a
// non-null graphNodeId counts as replayed from a graph. Errors name the file,
// the table and the column.
func ReadNsys(ctx context.Context, path string, opts ...Option) (*Profile, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("amdahl: nsys export: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return nil, fmt.Errorf("amdahl: nsys export %s: %w", path, err)
	}
	defer db.Close()
	r := nsysReader{ctx: ctx, db: db, path: path}
	tl, unixBase, baseKnown, err := r.read()
	if err != nil {
		return nil, err
	}
	p, err := attribute(tl, newAttrConfig(opts), "nsys", path)
	if err != nil {
		return nil, err
	}
	p.UnixBaseNs, p.UnixBaseKnown = unixBase, baseKnown
	return p, nil
}

type nsysReader struct {
	ctx    context.Context
	db     *sql.DB
	path   string
	tables map[string][]string // table → columns
}

func (r *nsysReader) errf(table, format string, args ...any) error {
	return fmt.Errorf("amdahl: nsys export %s: table %s: %s", r.path, table, fmt.Sprintf(format, args...))
}

func (r *nsysReader) has(table string, cols ...string) bool {
	have, ok := r.tables[table]
	if !ok {
		return false
	}
	for _, c := range cols {
		if !slices.Contains(have, c) {
			return false
		}
	}
	return true
}

func (r *nsysReader) need(table string, cols ...string) error {
	have, ok := r.tables[table]
	if !ok {
		return r.errf(table, "missing (not an Nsight Systems export with CUDA trace?)")
	}
	for _, c := range cols {
		if !slices.Contains(have, c) {
			return r.errf(table, "missing column %s (has %s)", c, strings.Join(have, ", "))
		}
	}
	return nil
}

func (r *nsysReader) schema() error {
	rows, err := r.db.QueryContext(r.ctx, `SELECT name FROM sqlite_master WHERE type IN ('table','view')`)
	if err != nil {
		return fmt.Errorf("amdahl: nsys export %s: sqlite_master: %w", r.path, err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return fmt.Errorf("amdahl: nsys export %s: sqlite_master: %w", r.path, err)
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("amdahl: nsys export %s: sqlite_master: %w", r.path, err)
	}
	r.tables = map[string][]string{}
	for _, n := range names {
		cols, err := r.db.QueryContext(r.ctx, `SELECT name FROM pragma_table_info(?)`, n)
		if err != nil {
			return r.errf(n, "table_info: %v", err)
		}
		for cols.Next() {
			var c string
			if err := cols.Scan(&c); err != nil {
				cols.Close()
				return r.errf(n, "table_info: %v", err)
			}
			r.tables[n] = append(r.tables[n], c)
		}
		cols.Close()
	}
	return nil
}

// col returns the column expression if present, else a NULL literal.
func (r *nsysReader) col(table, c string) string {
	if r.has(table, c) {
		return c
	}
	return "NULL"
}

func (r *nsysReader) read() (tl timeline, unixBase int64, baseKnown bool, err error) {
	if err = r.schema(); err != nil {
		return
	}
	if err = r.need(nsysKernel, "start", "end", "deviceId", "streamId"); err != nil {
		return
	}
	if err = r.need(nsysStrings, "id", "value"); err != nil {
		return
	}
	nameCol := ""
	for _, c := range []string{"demangledName", "shortName", "mangledName"} {
		if r.has(nsysKernel, c) {
			nameCol = c
			break
		}
	}
	if nameCol == "" {
		err = r.errf(nsysKernel, "missing column demangledName, shortName or mangledName")
		return
	}
	tl.launches = map[int64]launchEv{}
	if r.has(nsysRuntime, "start", "globalTid", "correlationId", "nameId") {
		if err = r.runtime(&tl); err != nil {
			return
		}
	}
	if err = r.gpuWork(&tl, nsysKernel, "kernel", "(SELECT value FROM StringIds WHERE id = k."+nameCol+")"); err != nil {
		return
	}
	for _, t := range []struct{ table, kind string }{{nsysMemcpy, "memcpy"}, {nsysMemset, "memset"}} {
		if r.has(t.table, "start", "end", "deviceId", "streamId") {
			if err = r.gpuWork(&tl, t.table, t.kind, "'"+t.kind+"'"); err != nil {
				return
			}
		}
	}
	if r.has(nsysNVTX, "start", "end", "eventType", "globalTid") {
		if err = r.nvtx(&tl); err != nil {
			return
		}
	}
	if r.has(nsysSession, "utcEpochNs") {
		var v sql.NullInt64
		if e := r.db.QueryRowContext(r.ctx, `SELECT utcEpochNs FROM `+nsysSession+` LIMIT 1`).Scan(&v); e == nil && v.Valid {
			unixBase, baseKnown = v.Int64, true
		}
	}
	slices.SortStableFunc(tl.kernels, func(a, b rawKernel) int { return cmpDur(a.k.Start, b.k.Start) })
	return
}

// pidOf extracts the process id from an Nsight global id (bits 24–47).
func pidOf(global int64) int64 { return (global >> 24) & 0xFFFFFF }

func corrKey(pid, corr int64) int64 { return pid<<32 | corr&0xFFFFFFFF }

func (r *nsysReader) gpuWork(tl *timeline, table, kind, nameExpr string) error {
	q := fmt.Sprintf(`SELECT k.start, k.end, k.deviceId, k.streamId, %s, %s, %s, %s FROM %s AS k`,
		nameExpr, "k."+r.col(table, "correlationId"), "k."+r.col(table, "globalPid"), "k."+r.col(table, "graphNodeId"), table)
	q = strings.ReplaceAll(q, "k.NULL", "NULL")
	rows, err := r.db.QueryContext(r.ctx, q)
	if err != nil {
		return r.errf(table, "%v", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		var start, end, dev, stream sql.NullInt64
		var name sql.NullString
		var corr, gpid, node sql.NullInt64
		if err := rows.Scan(&start, &end, &dev, &stream, &name, &corr, &gpid, &node); err != nil {
			return r.errf(table, "row %d: %v", n, err)
		}
		switch {
		case !start.Valid || !end.Valid:
			return r.errf(table, "row %d: column start/end: NULL", n)
		case end.Int64 < start.Int64:
			return r.errf(table, "row %d: column end: %d < start %d", n, end.Int64, start.Int64)
		case !name.Valid && kind == "kernel":
			return r.errf(table, "row %d: kernel name id not found in StringIds", n)
		}
		rk := rawKernel{k: Kernel{Name: name.String, Kind: kind, Device: dev.Int64, Stream: stream.Int64,
			Start: time.Duration(start.Int64), End: time.Duration(end.Int64)}}
		if corr.Valid {
			rk.corr, rk.hasCorr = corrKey(pidOf(gpid.Int64), corr.Int64), true
		}
		rk.graph = node.Valid // a graph node's kernel, whatever launched it
		tl.kernels = append(tl.kernels, rk)
	}
	if err := rows.Err(); err != nil {
		return r.errf(table, "%v", err)
	}
	return nil
}

func (r *nsysReader) runtime(tl *timeline) error {
	rows, err := r.db.QueryContext(r.ctx, `SELECT rt.start, rt.globalTid, rt.correlationId, s.value
		FROM `+nsysRuntime+` AS rt LEFT JOIN StringIds AS s ON s.id = rt.nameId`)
	if err != nil {
		return r.errf(nsysRuntime, "%v", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		var start, gtid, corr sql.NullInt64
		var name sql.NullString
		if err := rows.Scan(&start, &gtid, &corr, &name); err != nil {
			return r.errf(nsysRuntime, "row %d: %v", n, err)
		}
		if !start.Valid || !corr.Valid {
			continue
		}
		tl.launches[corrKey(pidOf(gtid.Int64), corr.Int64)] = launchEv{
			thread: fmt.Sprint(gtid.Int64), at: time.Duration(start.Int64), name: name.String}
	}
	if err := rows.Err(); err != nil {
		return r.errf(nsysRuntime, "%v", err)
	}
	return nil
}

func (r *nsysReader) nvtx(tl *timeline) error {
	text := "e." + r.col(nsysNVTX, "text")
	textID := "(SELECT value FROM StringIds WHERE id = e." + r.col(nsysNVTX, "textId") + ")"
	q := strings.ReplaceAll(fmt.Sprintf(`SELECT e.start, e.end, e.globalTid, COALESCE(%s, %s) FROM %s AS e WHERE e.eventType IN (%d, %d)`,
		text, textID, nsysNVTX, nvtxPushPop, nvtxStartEn), "e.NULL", "NULL")
	rows, err := r.db.QueryContext(r.ctx, q)
	if err != nil {
		return r.errf(nsysNVTX, "%v", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		var start, end, gtid sql.NullInt64
		var name sql.NullString
		if err := rows.Scan(&start, &end, &gtid, &name); err != nil {
			return r.errf(nsysNVTX, "row %d: %v", n, err)
		}
		if !start.Valid || !end.Valid || !name.Valid {
			continue // an unfinished or unnamed range attributes nothing
		}
		if end.Int64 < start.Int64 {
			return r.errf(nsysNVTX, "row %d: column end: %d < start %d", n, end.Int64, start.Int64)
		}
		tl.cpuRanges = append(tl.cpuRanges, cpuRange{name: name.String, thread: fmt.Sprint(gtid.Int64),
			iv: Interval{time.Duration(start.Int64), time.Duration(end.Int64)}})
	}
	if err := rows.Err(); err != nil {
		return r.errf(nsysNVTX, "%v", err)
	}
	return nil
}
