package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// parseUnixDecimal parses a non-negative decimal number of Unix time units
// (scale: 0 seconds, 3 milliseconds, 6 microseconds, 9 nanoseconds) exactly:
// whole and fractional digits are read as integers, never through a float, so
// "1767225600.1" is 1767225600 s + 100,000,000 ns. An exponent ("1.7e9") is
// applied by moving the decimal point. Digits below the nanosecond are
// dropped (the time is truncated, as time.Parse truncates). Leading and
// trailing spaces, a leading "+" and JSON's surrounding quotes are not
// accepted here: the caller trims. Its cases (sign, digits, point,
// exponent) share one cursor over b and it runs for every line of a log
// with Unix times: one function.
func parseUnixDecimal(b []byte, scale int) (sec, ns int64, err error) {
	if len(b) == 0 {
		return 0, 0, errors.New("empty time")
	}
	if len(b) <= 18 && scale >= 0 && scale <= 9 {
		// An integer (most logs' times): no point, no exponent.
		var v int64
		i := 0
		for ; i < len(b) && b[i]-'0' <= 9; i++ {
			v = v*10 + int64(b[i]-'0')
		}
		if i == len(b) {
			unit := pow10[scale]
			if s := v / unit; s <= maxUnix {
				return s, v % unit * pow10[9-scale], nil
			}
		}
	}
	bad := func() (int64, int64, error) {
		return 0, 0, fmt.Errorf("time %q is not a non-negative decimal number", excerptString(b))
	}
	// Collect significant digits and where the decimal point falls among them.
	var dig [40]byte
	nd, point, i := 0, 0, 0 // point: digits before the decimal point
	sawDigit, sawPoint := false, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			sawDigit = true
			if nd == 0 && c == '0' {
				if sawPoint {
					point--
				}
				continue // leading zero
			}
			if nd < len(dig) {
				dig[nd] = c - '0'
				nd++
				if !sawPoint {
					point++
				}
			} else {
				if !sawPoint {
					point++
				}
			}
		case c == '.' && !sawPoint:
			sawPoint = true
		default:
			goto exponent
		}
	}
exponent:
	if !sawDigit {
		return bad()
	}
	if i < len(b) {
		if b[i] != 'e' && b[i] != 'E' || i+1 == len(b) {
			return bad()
		}
		i++
		neg := false
		if b[i] == '+' || b[i] == '-' {
			neg = b[i] == '-'
			i++
		}
		if i == len(b) || len(b)-i > 4 {
			return bad()
		}
		e := 0
		for ; i < len(b); i++ {
			if b[i] < '0' || b[i] > '9' {
				return bad()
			}
			e = e*10 + int(b[i]-'0')
		}
		if neg {
			e = -e
		}
		point += e
	}
	point -= scale // now: digits before the point are whole seconds
	if nd == 0 {
		return 0, 0, nil
	}
	if point > 12 { // beyond year 33658; maxUnix is checked below
		return 0, 0, fmt.Errorf("time %q out of range%s", excerptString(b), finerUnitHint(scale))
	}
	for k := 0; k < point; k++ {
		d := int64(0)
		if k < nd {
			d = int64(dig[k])
		}
		sec = sec*10 + d
	}
	for k := point; k < point+9; k++ {
		d := int64(0)
		if k >= 0 && k < nd {
			d = int64(dig[k])
		}
		ns = ns*10 + d
	}
	if sec > maxUnix {
		return 0, 0, fmt.Errorf("time %q out of range%s", excerptString(b), finerUnitHint(scale))
	}
	return sec, ns, nil
}

// pow10[i] is 10^i.
var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// unitScale is the decimal scale of a numeric time format (seconds = 0).
// finerUnitHint suggests a finer unit for a Unix time past year 9999 in
// the unit given (scale digits below the second): most such times are
// milliseconds, microseconds or nanoseconds read as seconds.
func finerUnitHint(scale int) string {
	if scale >= 9 {
		return ""
	}
	return " (past year 9999: is the unit finer? time formats unix_ms, unix_us, unix_ns, or auto)"
}

func unitScale(f TimeFormat) int {
	switch f {
	case TimeUnixMs:
		return 3
	case TimeUnixUs:
		return 6
	case TimeUnixNs:
		return 9
	}
	return 0
}

// guessScale picks the unit of a bare Unix number by its magnitude (the
// digits of its whole part, exponent applied): up to 11 digits seconds
// (until year 5138), 12–14 milliseconds, 15–17 microseconds, more
// nanoseconds.
func guessScale(b []byte) int {
	n, i := 0, 0
	for ; i < len(b) && b[i] != '.' && b[i] != 'e' && b[i] != 'E'; i++ {
		if b[i] >= '0' && b[i] <= '9' && (n > 0 || b[i] != '0') {
			n++
		}
	}
	if j := bytes.IndexAny(b, "eE"); j >= 0 {
		if n == 0 { // 0.00123e9: count the fraction's leading zeros
			for k := i + 1; k < j && b[k] == '0'; k++ {
				n--
			}
		}
		e, err := strconv.Atoi(string(b[j+1:]))
		if err == nil {
			n += e
		}
	}
	switch {
	case n <= 11:
		return 0
	case n <= 14:
		return 3
	case n <= 17:
		return 6
	}
	return 9
}

// parseRFC3339 parses an RFC 3339 time with any fractional precision (up to
// the nanosecond; further digits truncate). The usual forms are read in
// place (rfc3339Fast); others go through time.Parse.
func parseRFC3339(b []byte) (sec, ns int64, err error) {
	if sec, ns, ok := rfc3339Fast(b); ok {
		return sec, ns, nil
	}
	s := string(b)
	t, perr := time.Parse(time.RFC3339Nano, s)
	if perr != nil {
		// A space instead of the "T" (allowed by RFC 3339 section 5.6's note).
		if len(s) > 10 && s[10] == ' ' {
			s = s[:10] + "T" + s[11:]
			t, perr = time.Parse(time.RFC3339Nano, s)
		}
		// A leap second, 23:59:60 (time.Parse refuses it): the next
		// second, as CLF's is read.
		if perr != nil && len(s) > 19 && s[16:19] == ":60" {
			if t, perr = time.Parse(time.RFC3339Nano, s[:17]+"59"+s[19:]); perr == nil {
				t = t.Add(time.Second)
			}
		}
		if perr != nil {
			return 0, 0, fmt.Errorf("time %q is not RFC 3339", excerptString(b))
		}
	}
	if t.Unix() < 0 || t.Unix() > maxUnix {
		return 0, 0, fmt.Errorf("time %q out of range", excerptString(b))
	}
	return t.Unix(), int64(t.Nanosecond()), nil
}

// rfc3339Fast reads the usual RFC 3339 form, yyyy-mm-ddThh:mm:ss (or a
// space for the T), up to nine fraction digits after a '.', then Z or
// ±hh:mm, valid and within [0, maxUnix] Unix seconds, without allocating
// (time.Parse keeps its input for its errors, so every line's time would
// be a string). ok is false for anything else, which parseRFC3339 leaves
// to time.Parse: the two agree wherever this one answers
// (TestRFC3339FastEqualsTimeParse).
func rfc3339Fast(b []byte) (sec, ns int64, ok bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return 0, 0, false
	}
	num := func(i, n int) int { // -1: not all digits
		if v, ok := digits(b[i : i+n]); ok {
			return v
		}
		return -1
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hh, mm, ss := num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) ||
		hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 59 {
		return 0, 0, false
	}
	i := 19
	if b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if i-start == 9 {
				return 0, 0, false
			}
			ns = ns*10 + int64(b[i]-'0')
			i++
		}
		if i == start {
			return 0, 0, false
		}
		for range 9 - (i - start) {
			ns *= 10
		}
	}
	var off int
	switch {
	case i+1 == len(b) && b[i] == 'Z':
	case i+6 == len(b) && (b[i] == '+' || b[i] == '-') && b[i+3] == ':':
		oh, om := num(i+1, 2), num(i+4, 2)
		if oh < 0 || oh > 23 || om < 0 || om > 59 {
			return 0, 0, false
		}
		if off = oh*3600 + om*60; b[i] == '-' {
			off = -off
		}
	default:
		return 0, 0, false
	}
	sec = unixSeconds(year, month, day, hh, mm, ss) - int64(off)
	if sec < 0 || sec > maxUnix {
		return 0, 0, false
	}
	return sec, ns, true
}
