package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/transferlab/transferlab/internal/secret"
)

// secretSegment matches a key path segment whose values are never printed:
// request headers (API keys), a command's environment, and any key named for
// a token, password, credential, secret or API key.
var secretSegment = regexp.MustCompile(`(?i)^(headers|env)$|(token|apikey|api_key|password|passwd|secret|credentials?|authorization)$`)

// isSecretKey reports whether any segment of the dotted path key is secret.
func isSecretKey(key string) bool {
	for _, seg := range strings.FieldsFunc(key, func(r rune) bool { return r == '.' || r == '[' || r == ']' }) {
		if secretSegment.MatchString(seg) {
			return true
		}
	}
	return false
}

// durationKey matches a config key holding a time.Duration: recorded as
// text ("30s") by the config's own keys, in nanoseconds by files written
// before (flatConfig makes both text).
var durationKey = regexp.MustCompile(`(?i)(duration|warmup|timeout|period|budget|window|grace|interval|idle)$`)

// ConfigKeyDiffs names the keys of two runs' recorded configs
// (manifest.config_requested, flattened to the dotted paths of the config
// file's own keys, such as "load.rates_rps") that differ, each with A's and
// B's value: "load.rates_rps (A=[3 10 24], B=[10])". A secret's values are
// never given ("(values not shown: secret)"); URLs lose their userinfo. It
// returns nil when either run recorded no config, and one entry saying so
// when the recorded configs are alike (the files differ in comments or
// layout only). A results.json written before config_requested was keyed
// as the config file is holds Go field names ("Load.RatesRPS",
// "Extra.CapacitySearch"): their keys are translated by rule (legacyKey).
func ConfigKeyDiffs(a, b Results) []string {
	fa, okA := flatConfig(a.Manifest.Requested)
	fb, okB := flatConfig(b.Manifest.Requested)
	if !okA || !okB {
		return nil
	}
	keys := slices.Sorted(maps.Keys(fa))
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	blocks := map[string]bool{} // blocks set on one side only, said once
	for _, k := range keys {
		x, inA := fa[k]
		y, inB := fb[k]
		if inA && inB && x == y {
			continue
		}
		if b := absentBlock(k, fa, fb); b != "" {
			if !blocks[b] {
				blocks[b] = true
				a, c := "set", "not set"
				if !inA {
					a, c = c, a
				}
				out = append(out, fmt.Sprintf("%s (A=%s, B=%s)", b, a, c))
			}
			continue
		}
		if isSecretKey(k) {
			out = append(out, k+" (values not shown: secret)")
			continue
		}
		out = append(out, fmt.Sprintf("%s (A=%s, B=%s)", k, configValue(k, x, inA), configValue(k, y, inB)))
	}
	if len(out) == 0 {
		return []string{"no recorded config key differs (the files differ in comments or layout only)"}
	}
	return out
}

// absentBlock is the outermost block (a dotted prefix of key, shorter than
// key) that one side sets and the other has no key in at all: "server.sim"
// when only B configures the simulator. "" when key differs on its own.
func absentBlock(key string, fa, fb map[string]string) string {
	for i, r := range key {
		if r != '.' {
			continue
		}
		p := key[:i]
		if !hasBlock(fa, p) || !hasBlock(fb, p) {
			return p
		}
	}
	return ""
}

// hasBlock reports whether f holds a key inside block p.
func hasBlock(f map[string]string, p string) bool {
	for k := range f {
		if strings.HasPrefix(k, p+".") || strings.HasPrefix(k, p+"[") {
			return true
		}
	}
	return false
}

// configValue prints one flattened value for a person: absent keys as
// "not set", durations as durations, URLs without their userinfo.
func configValue(key, v string, present bool) string {
	if !present || v == "null" {
		return "not set"
	}
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		v = s
	}
	return secret.URL(v)
}

// flatConfig flattens a recorded config into dotted key paths, each with its
// value's JSON (a list's elements joined as "[a b c]" when they are scalars,
// else one key per index), Go field names translated (legacyKey) and
// durations as text. ok is false when there is none.
func flatConfig(c any) (map[string]string, bool) {
	if c == nil {
		return nil, false
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				walk(strings.TrimPrefix(prefix+"."+k, "."), x)
			}
			return
		case []any:
			scalars := !slices.ContainsFunc(t, func(x any) bool {
				switch x.(type) {
				case map[string]any, []any:
					return true
				}
				return false
			})
			if !scalars {
				for i, x := range t {
					walk(fmt.Sprintf("%s[%d]", prefix, i), x)
				}
				return
			}
			if len(t) == 0 {
				return // empty: not set
			}
			parts := make([]string, len(t))
			for i, x := range t {
				parts[i] = fmt.Sprint(x)
			}
			out[prefix] = "[" + strings.Join(parts, " ") + "]"
			return
		}
		if v == nil {
			return // null: not set, like a key left out
		}
		j, _ := json.Marshal(v)
		if zeroValue[string(j)] {
			// A zero is the default a key left out takes (and the
			// config's keys omit it): not set.
			return
		}
		out[prefix] = string(j)
	}
	walk("", v)
	legacy := false
	for k := range out {
		legacy = legacy || k != "" && unicode.IsUpper(rune(k[0]))
	}
	keyed := make(map[string]string, len(out))
	for k, x := range out {
		if legacy {
			k = legacyKey(k)
		}
		var n float64
		if durationKey.MatchString(k) && json.Unmarshal([]byte(x), &n) == nil {
			j, _ := json.Marshal(time.Duration(n).String())
			x = string(j)
		}
		if durationKey.MatchString(k) && x == `"0s"` {
			continue // zero: not set
		}
		keyed[k] = x
	}
	return keyed, true
}

// zeroValue holds the JSON of a zero scalar (an empty list, and a zero
// duration, are not set either).
var zeroValue = map[string]bool{"0": true, "false": true, `""`: true}

// legacyKey is the config file's key for a dotted path of Go field names
// (a results.json written before config_requested was keyed as the config
// file is): "Extra.CapacitySearch.ProbeWarmup" → "capacity_search.probe_warmup".
// Each field name goes to snake case, acronyms kept whole ("RatesRPS" →
// "rates_rps", "CAFile" → "ca_file"); the inlined Extra block is dropped;
// a "_ns" suffix (a duration in nanoseconds) is dropped; map keys (after
// Headers or Env) stay as written. A rule, not the schema:
// a key whose YAML name is not its field's snake case is named wrongly.
func legacyKey(k string) string {
	segs := strings.Split(k, ".")
	out := make([]string, 0, len(segs))
	asWritten := false
	for i, seg := range segs {
		if i == 0 && seg == "Extra" {
			continue
		}
		if asWritten {
			out = append(out, seg)
			asWritten = false
			continue
		}
		name, index, _ := strings.Cut(seg, "[")
		if index != "" {
			index = "[" + index
		}
		// A block with JSON tags of its own recorded a duration as
		// "ready_timeout_ns": its config key is "ready_timeout".
		out = append(out, strings.TrimSuffix(snake(name), "_ns")+index)
		asWritten = strings.EqualFold(name, "Headers") || strings.EqualFold(name, "Env")
	}
	return strings.Join(out, ".")
}

// snake writes a Go field name in snake case, an acronym as one word:
// "MaxRequests" → "max_requests", "TTFTMs" → "ttft_ms", "CAFile" →
// "ca_file"; a name already in snake case is kept.
func snake(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && r[i-1] != '_' {
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || nextLower && unicode.IsUpper(r[i-1]) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
