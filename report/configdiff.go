package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

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

// durationKey matches a config key holding a time.Duration, recorded in
// results.json in nanoseconds.
var durationKey = regexp.MustCompile(`(Duration|Warmup|Timeout|Period|Budget|Window)$`)

// ConfigKeyDiffs names the keys of two runs' recorded configs
// (manifest.config_requested, flattened to dotted paths such as
// "Load.RatesRPS") that differ, each with A's and B's value: "Load.RatesRPS
// (A=[3 10 24], B=[10])". A secret's values are never given ("(values not
// shown: secret)"); URLs lose their userinfo. It returns nil when either
// run recorded no config, and one entry saying so when the recorded configs
// are alike (the files differ in comments or layout only).
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
// key) that one side sets and the other has no key in at all: "Server.Sim"
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
	var n float64
	if durationKey.MatchString(key) && json.Unmarshal([]byte(v), &n) == nil {
		return time.Duration(n).String()
	}
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		v = s
	}
	return secret.URL(v)
}

// flatConfig flattens a recorded config into dotted key paths, each with its
// value's JSON (a list's elements joined as "[a b c]" when they are scalars,
// else one key per index). ok is false when there is none.
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
		out[prefix] = string(j)
	}
	walk("", v)
	return out, true
}
