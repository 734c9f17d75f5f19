package report

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// CheckFinite returns an error naming every float field of r that is NaN or
// ±Inf, by its results.json path (e.g. "energy.cells[3].idle_power_w"):
// encoding/json cannot write them, and a figure that was not measured must be
// said so (NotMeasured, Available, a nil pointer), never NaN. Call it before
// writing results.json.
func CheckFinite(r Results) error {
	var errs []error
	walkFinite(reflect.ValueOf(r), "", &errs)
	return errors.Join(errs...)
}

func walkFinite(v reflect.Value, path string, errs *[]error) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			*errs = append(*errs, fmt.Errorf("results.json field %s is %v: not a number JSON can hold", path, f))
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkFinite(v.Elem(), path, errs)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			walkFinite(iter.Value(), fmt.Sprintf("%s[%v]", path, iter.Key()), errs)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			p := name
			if f.Anonymous && f.Tag.Get("json") == "" {
				p = "" // embedded: its fields sit at this level in JSON
			}
			walkFinite(v.Field(i), joinPath(path, p), errs)
		}
	}
}

func joinPath(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}
