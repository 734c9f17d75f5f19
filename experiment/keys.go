package experiment

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// unknownKeys walks a decoded YAML document against the Go type it will be
// decoded into and returns one message per key the type does not have, with
// its exact line and column and its dotted path. yaml's own KnownFields stops
// at the first custom unmarshaller and reports nested lines relative to it;
// this reports every unknown key of the file at once.
func unknownKeys(n *yaml.Node, t reflect.Type) []string {
	var out []string
	walkKeys(n, t, "", &out)
	return out
}

var (
	durationType   = reflect.TypeOf(time.Duration(0))
	simSectionType = reflect.TypeOf(SimSection{})
)

func walkKeys(n *yaml.Node, t reflect.Type, path string, out *[]string) {
	if n == nil {
		return
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			walkKeys(c, t, path, out)
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		walkKeys(n.Alias, t, path, out)
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == simSectionType {
		t = t.Field(0).Type // the embedded sim.Config
	}
	switch {
	case t == durationType:
		return
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			p := join(path, k.Value)
			if !ok {
				*out = append(*out, fmt.Sprintf("line %d column %d: %s: unknown key", k.Line, k.Column, p))
				continue
			}
			walkKeys(v, ft, p, out)
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			walkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), out)
		}
	}
}

// yamlFields maps the YAML keys of struct t (inline structs flattened) to
// their types, following yaml's tag rules.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range yamlFields(ft) {
					m[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	return m
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
