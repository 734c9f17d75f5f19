//go:build nvml && cgo && linux

package energy

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// TestFieldValue decodes NVML field values of each value type, as
// FI_DEV_POWER_INSTANT returns them (mW, usually unsigned int).
func TestFieldValue(t *testing.T) {
	t.Parallel()
	enc := func(vt nvml.ValueType, put func(b []byte)) nvml.FieldValue {
		f := nvml.FieldValue{FieldId: nvml.FI_DEV_POWER_INSTANT, ValueType: uint32(vt)}
		put(f.Value[:])
		return f
	}
	cases := []struct {
		name string
		f    nvml.FieldValue
		want float64
		bad  bool
	}{
		{"unsigned int mW", enc(nvml.VALUE_TYPE_UNSIGNED_INT, func(b []byte) { binary.NativeEndian.PutUint32(b, 412_345) }), 412_345, false},
		{"unsigned long long", enc(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, func(b []byte) { binary.NativeEndian.PutUint64(b, 1<<40) }), 1 << 40, false},
		{"unsigned long", enc(nvml.VALUE_TYPE_UNSIGNED_LONG, func(b []byte) { binary.NativeEndian.PutUint64(b, 77_000) }), 77_000, false},
		{"signed long long", enc(nvml.VALUE_TYPE_SIGNED_LONG_LONG, func(b []byte) { binary.NativeEndian.PutUint64(b, uint64(1<<64-5)) }), -5, false},
		{"signed int", enc(nvml.VALUE_TYPE_SIGNED_INT, func(b []byte) { binary.NativeEndian.PutUint32(b, uint32(1<<32-7)) }), -7, false},
		{"unsigned short", enc(nvml.VALUE_TYPE_UNSIGNED_SHORT, func(b []byte) { binary.NativeEndian.PutUint16(b, 700) }), 700, false},
		{"double", enc(nvml.VALUE_TYPE_DOUBLE, func(b []byte) { binary.NativeEndian.PutUint64(b, math.Float64bits(689.5)) }), 689.5, false},
		{"unknown type", nvml.FieldValue{ValueType: 99}, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := fieldValue(tc.f)
			if (err != nil) != tc.bad || got != tc.want {
				t.Errorf("fieldValue = %v, %v; want %v (error %t)", got, err, tc.want, tc.bad)
			}
		})
	}
}
