package traces

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Time units a trace column can carry. Relative units are decimal numbers of
// that unit since the trace's start; UnitDatetime is an absolute wall-clock time.
const (
	UnitSeconds      = "s"
	UnitMilliseconds = "ms"
	UnitMicroseconds = "us"
	UnitNanoseconds  = "ns"
	// UnitDatetime is "YYYY-MM-DD[ T]hh:mm:ss[.fraction][Z|±hh:mm|±hhmm]";
	// any number of fractional digits (Azure 2023 writes 7, Azure 2024 writes 6
	// or none at a whole second); no zone designator means UTC.
	UnitDatetime = "datetime"
)

// unitDigits returns log10(ns per unit) for a relative unit.
func unitDigits(unit string) (int, bool) {
	switch unit {
	case UnitSeconds:
		return 9, true
	case UnitMilliseconds:
		return 6, true
	case UnitMicroseconds:
		return 3, true
	case UnitNanoseconds:
		return 0, true
	}
	return 0, false
}

var errEmpty = errors.New("empty value")

// parseInt parses a non-negative decimal integer (leading '+' allowed).
func parseInt(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, errEmpty
	}
	if b[0] == '+' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, fmt.Errorf("%q is not a non-negative integer of at most 18 digits", b)
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a non-negative integer", b)
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// parseDecimalNs converts a decimal number of units (10^digits ns each) to
// integer nanoseconds exactly: the decimal point is shifted by digits places
// and the result rounded half-up on the next digit, so vidur's binary noise
// ("199.96150599999999" s) becomes 199.961506 s exactly. Numbers with an
// exponent fall back to float64 arithmetic rounded to the nearest ns.
func parseDecimalNs(b []byte, digits int) (int64, error) {
	if len(b) == 0 {
		return 0, errEmpty
	}
	neg := false
	s := b
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	var n int64
	seenDigit, seenDot := false, false
	frac := 0 // fractional digits consumed into n
	roundUp := false
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			seenDigit = true
			if seenDot {
				frac++
				if frac == digits+1 {
					roundUp = c >= '5' // only the first dropped digit decides
				}
				if frac > digits {
					continue
				}
			}
			if n > (math.MaxInt64-9)/10 {
				return 0, fmt.Errorf("%q overflows int64 nanoseconds", b)
			}
			n = n*10 + int64(c-'0')
		case c == '.' && !seenDot:
			seenDot = true
		case c == 'e' || c == 'E':
			return parseFloatNs(b, digits)
		default:
			return 0, fmt.Errorf("%q is not a decimal number", b)
		}
	}
	if !seenDigit {
		return 0, fmt.Errorf("%q is not a decimal number", b)
	}
	for ; frac < digits; frac++ {
		// pad the missing fractional digits with zeros
		if n > math.MaxInt64/10 {
			return 0, fmt.Errorf("%q overflows int64 nanoseconds", b)
		}
		n *= 10
	}
	if roundUp {
		n++
	}
	if neg {
		n = -n
	}
	return n, nil
}

func parseFloatNs(b []byte, digits int) (int64, error) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a decimal number", b)
	}
	ns := f * math.Pow10(digits)
	if math.IsNaN(ns) || math.Abs(ns) >= math.MaxInt64/2 {
		return 0, fmt.Errorf("%q overflows int64 nanoseconds", b)
	}
	return int64(math.Round(ns)), nil
}

// parseDatetimeNs parses UnitDatetime into Unix nanoseconds (UTC, or shifted
// by the given zone offset). Fraction digits past the ninth are dropped (they
// are below 1 ns).
func parseDatetimeNs(b []byte) (int64, error) {
	bad := func(what string) (int64, error) {
		return 0, fmt.Errorf("%q is not a datetime YYYY-MM-DD hh:mm:ss[.f][zone]: %s", b, what)
	}
	if len(b) < 19 {
		return bad("too short")
	}
	num := func(p, n int) int {
		v := 0
		for _, c := range b[p : p+n] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d := num(0, 4), num(5, 2), num(8, 2)
	h, mi, sec := num(11, 2), num(14, 2), num(17, 2)
	if b[4] != '-' || b[7] != '-' || (b[10] != ' ' && b[10] != 'T') || b[13] != ':' || b[16] != ':' {
		return bad("separators")
	}
	if y < 0 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return bad("field out of range")
	}
	rest := b[19:]
	var fracNs int64
	if len(rest) > 0 && rest[0] == '.' {
		rest = rest[1:]
		k := 0
		scale := int64(100_000_000)
		for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
			fracNs += int64(rest[k]-'0') * scale
			scale /= 10
			k++
		}
		if k == 0 {
			return bad("empty fraction")
		}
		rest = rest[k:]
	}
	var zoneS int64
	switch {
	case len(rest) == 0:
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':',
		len(rest) == 5 && (rest[0] == '+' || rest[0] == '-'):
		zh := 0
		zm := 0
		for _, c := range rest[1:3] {
			if c < '0' || c > '9' {
				return bad("zone")
			}
			zh = zh*10 + int(c-'0')
		}
		mm := rest[len(rest)-2:]
		for _, c := range mm {
			if c < '0' || c > '9' {
				return bad("zone")
			}
			zm = zm*10 + int(c-'0')
		}
		if zh > 23 || zm > 59 {
			return bad("zone")
		}
		zoneS = int64(zh*3600 + zm*60)
		if rest[0] == '-' {
			zoneS = -zoneS
		}
	default:
		return bad("trailing text")
	}
	secs := daysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+sec) - zoneS
	return secs*1_000_000_000 + fracNs, nil
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to y-m-d in the
// proleptic Gregorian calendar (H. Hinnant, "chrono-Compatible Low-Level Date
// Algorithms", days_from_civil).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// timeDuration converts integer nanoseconds to a time.Duration.
func timeDuration(ns int64) time.Duration { return time.Duration(ns) }
