package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
)

// ParseCombined parses one Common or Combined Log Format line (without its
// newline) into rec:
//
//	host ident authuser [dd/Mon/yyyy:HH:MM:SS +zzzz] "METHOD target proto" status bytes ["referer" "user agent"]
//
// Fields after the user agent (Nginx extensions) are kept in rec.Trailer, and a user
// agent whose closing quote is missing runs to the end of the line. Status
// and bytes may be "-". The time is converted to UTC with its zone offset.
func ParseCombined(line []byte, rec *Record) error { return parseCombined(line, rec, nil) }

// clfClock remembers the last two CLF minutes parsed: the lines of one
// minute share their date, hour, minute and zone, and only the seconds
// differ (a busy log writes many lines a minute; lines written at
// completion time alternate between two minutes at its turn).
type clfClock struct {
	minutes [2]clfMinute
	next    int // the entry to replace
}

// clfMinute is one parsed CLF time.
type clfMinute struct {
	stamp [26]byte
	unix  int64 // the time of stamp, Unix seconds
	ss    int   // stamp's seconds
	set   bool
}

// parseCombined is ParseCombined reading times through c (nil: none).
func (c *clfClock) parseCombined(line []byte, rec *Record) error { return parseCombined(line, rec, c) }

// time parses a CLF time (26 bytes) as parseCLFTime does.
func (c *clfClock) time(b []byte) (int64, error) {
	if c == nil {
		return parseCLFTime(b)
	}
	if len(b) == 26 && b[17] == ':' {
		d0, d1 := b[18]-'0', b[19]-'0'
		if d0 <= 6 && d1 <= 9 {
			ss := int(d0)*10 + int(d1)
			for i := range c.minutes {
				// Same date, hour, minute and zone: only the seconds to read.
				if m := &c.minutes[i]; m.set && ss <= 60 && sameMinute(b, &m.stamp) {
					return m.unix + int64(ss-m.ss), nil
				}
			}
		}
	}
	t, err := parseCLFTime(b)
	if err == nil {
		m := &c.minutes[c.next]
		c.next ^= 1
		copy(m.stamp[:], b)
		m.unix, m.ss, m.set = t, int(b[18]-'0')*10+int(b[19]-'0'), true
	}
	return t, err
}

// sameMinute reports whether b (26 bytes) has stamp's bytes but for the
// seconds (b[17:20], ":SS").
func sameMinute(b []byte, stamp *[26]byte) bool {
	_ = b[25]
	return binary.LittleEndian.Uint64(b) == binary.LittleEndian.Uint64(stamp[:]) &&
		binary.LittleEndian.Uint64(b[8:]) == binary.LittleEndian.Uint64(stamp[8:]) &&
		b[16] == stamp[16] &&
		binary.LittleEndian.Uint64(b[18:])>>16 == binary.LittleEndian.Uint64(stamp[18:])>>16
}

// parseCombined reads one Common or Combined Log Format line into rec,
// clock keeping the last minute's time. It is one function rather than one
// per field because it runs for every line: the fields are scanned in a
// single pass, each starting where the previous one ended.
func parseCombined(line []byte, rec *Record, clock *clfClock) error {
	rec.reset()
	// host, identity and user: space-separated tokens (a tab is part of one)
	i := indexSpace(line)
	if i <= 0 {
		if len(line) == 0 || i == 0 {
			return errors.New("missing host")
		}
		return errors.New("missing identity field")
	}
	rec.Host = line[:i]
	line = skipSpaces(line[i+1:])
	var ok bool
	if rec.Logname, line, ok = dashOrToken(line); !ok {
		return errors.New("missing identity field")
	}
	if rec.User, line, ok = dashOrToken(line); !ok {
		return errors.New("missing user field")
	}
	if len(line) < 28 || line[0] != '[' || line[27] != ']' {
		return errors.New("missing [dd/Mon/yyyy:HH:MM:SS +zzzz] time")
	}
	t, err := clock.time(line[1:27])
	if err != nil {
		return err
	}
	rec.Time = t
	line = skipSpaces(line[28:])
	req, line, err := quoted(line)
	if err != nil {
		return errors.New("request: " + err.Error())
	}
	splitRequest(req, rec)
	line = skipSpaces(line)
	// status: three digits or "-", then a space (the common case inline)
	if len(line) >= 4 && line[3] == ' ' && line[0] >= '1' && line[0] <= '9' &&
		line[1]-'0' <= 9 && line[2]-'0' <= 9 {
		rec.Status = int(line[0]-'0')*100 + int(line[1]-'0')*10 + int(line[2]-'0')
		line = skipSpaces(line[4:])
		if len(line) == 0 {
			return errors.New("missing bytes")
		}
	} else {
		var st []byte
		if st, line, ok = token(line); !ok {
			return errors.New("missing status")
		}
		if rec.Status, ok = parseStatus(st); !ok {
			return errors.New("status is not 100..999 or -")
		}
	}
	// bytes: digits then a space or the end (the common case inline)
	var n int64
	j := 0
	for j < len(line) && j < 18 && line[j]-'0' <= 9 {
		n = n*10 + int64(line[j]-'0')
		j++
	}
	switch {
	case j > 0 && j == len(line):
		rec.Bytes, line = n, nil
	case j > 0 && line[j] == ' ':
		rec.Bytes, line = n, skipSpaces(line[j+1:])
	default:
		var by []byte
		if by, line, ok = token(line); !ok {
			return errors.New("missing bytes")
		}
		if rec.Bytes, ok = parseCount(by); !ok {
			return errors.New("bytes is not a number or -")
		}
	}
	if len(line) == 0 {
		return nil // Common Log Format
	}
	if len(line) >= 3 && line[0] == '"' && line[1] == '-' && line[2] == '"' {
		rec.Referer, line = line[1:2], line[3:] // none, the most common referer
	} else if rec.Referer, line, err = quoted(line); err != nil {
		return errors.New("referer: " + err.Error())
	}
	line = skipSpaces(line)
	if len(line) == 0 {
		return errors.New("missing user agent after referer")
	}
	if line[0] != '"' {
		return errors.New("user agent: expected a quoted string")
	}
	ua, rest, err := quoted(line)
	if err != nil {
		// A user agent cut off at the end of the line (seen in real logs)
		// keeps what is there: time, key and request are intact.
		ua, rest = line[1:], nil
	}
	rec.UserAgent = ua
	if len(rest) == 0 {
		return nil // Combined, nothing after the user agent
	}
	rec.Trailer = bytes.TrimSpace(rest)
	if len(rec.Trailer) > 0 {
		exportedMsec(rec)
		rec.Forwarded = trailingForwarded(rec.Trailer)
	}
	return nil
}

// trailingForwarded is the X-Forwarded-For list a Combined line ends with
// as nginx's stock main format writes it ("$http_x_forwarded_for" after
// the user agent), or nil.
func trailingForwarded(t []byte) []byte {
	if len(t) < 3 || t[0] != '"' || t[len(t)-1] != '"' {
		return nil
	}
	v := t[1 : len(t)-1]
	if len(v) == 0 || len(v) == 1 && v[0] == '-' {
		return nil
	}
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '.' || c == ':' || c == ',' || c == ' ') {
			return nil
		}
	}
	return v
}

// exportedMsec takes the time from $msec where a Combined line ends as the
// log_format of ratesweep export --to nginx does, "$limit_req_status
// $msec": seconds with three decimals, within a second of [$time_local]
// (the same moment, to the millisecond).
func exportedMsec(rec *Record) {
	t := rec.Trailer
	i := bytes.LastIndexAny(t, " \t")
	if i < 0 || rec.LimitReqStatus() == "" {
		return
	}
	ms := t[i+1:]
	if len(ms) < 5 || ms[len(ms)-4] != '.' {
		return
	}
	sec, ns, err := parseUnixDecimal(ms, 0)
	if err != nil || sec < rec.Time-1 || sec > rec.Time+1 {
		return
	}
	rec.Time, rec.TimeNs = sec, ns
}

// dashOrToken is token with the common "- " inline (CLF's identity and
// user fields).
func dashOrToken(b []byte) (tok, rest []byte, ok bool) {
	if len(b) >= 2 && b[0] == '-' && b[1] == ' ' {
		return b[:1], skipSpaces(b[2:]), true
	}
	return token(b)
}

// token returns the bytes up to the next space and the rest after it.
func token(b []byte) (tok, rest []byte, ok bool) {
	if len(b) == 0 {
		return nil, nil, false
	}
	i := indexSpace(b)
	if i < 0 {
		return b, nil, true
	}
	return b[:i], skipSpaces(b[i+1:]), true
}

func skipSpaces(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// quoted parses a double-quoted string with backslash escapes (kept as
// logged) and returns its contents and the rest after the closing quote.
func quoted(b []byte) (s, rest []byte, err error) {
	// The common case inline: the first quote after the opening one,
	// not after a backslash, closes the string.
	if len(b) > 1 && b[0] == '"' {
		if j := bytes.IndexByte(b[1:], '"') + 1; j > 0 && b[j-1] != '\\' {
			return b[1:j], b[j+1:], nil
		}
	}
	return quotedEscaped(b)
}

// quotedEscaped is quoted counting the backslashes before each quote.
func quotedEscaped(b []byte) (s, rest []byte, err error) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, errors.New("expected a quoted string")
	}
	i := 1
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return nil, nil, errors.New("unterminated quoted string")
		}
		i += j
		// An odd number of backslashes before the quote escapes it.
		n := 0
		for k := i - 1; k > 0 && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return b[1:i], b[i+1:], nil
		}
		i++
	}
}

// splitRequest splits "METHOD target proto"; malformed requests (such as
// "-" or binary junk) keep what they have.
func splitRequest(req []byte, rec *Record) {
	var i int
	if len(req) > 4 && req[3] == ' ' && req[0] == 'G' && req[1] == 'E' && req[2] == 'T' {
		i = 3 // most requests
	} else if i = indexSpace(req); i < 0 {
		rec.Method = req
		return
	}
	rec.Method, req = req[:i], req[i+1:]
	// the protocol: most often 8 bytes ("HTTP/1.1") after the last space
	if n := len(req); n >= 9 && req[n-9] == ' ' && spaceBytes(binary.LittleEndian.Uint64(req[n-8:])) == 0 {
		rec.Path, rec.Proto = req[:n-9], req[n-8:]
		return
	}
	j := len(req) - 1
	for j >= 0 && req[j] != ' ' {
		j--
	}
	if j >= 0 {
		rec.Path, rec.Proto = req[:j], req[j+1:]
	} else {
		rec.Path = req
	}
}

// indexSpace is bytes.IndexByte(b, ' '), reading the first bytes eight at
// a time in a word: the short fields (host, method) end there, before a
// call to IndexByte would pay for itself.
func indexSpace(b []byte) int {
	const short = 24
	i := 0
	for ; i+8 <= len(b) && i < short; i += 8 {
		if m := spaceBytes(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	if i < short {
		for ; i < len(b); i++ {
			if b[i] == ' ' {
				return i
			}
		}
		return -1
	}
	if j := bytes.IndexByte(b[i:], ' '); j >= 0 {
		return i + j
	}
	return -1
}

// spaceBytes has the high bit of every byte of x that is a space set, and
// maybe of bytes above the lowest such byte (the lowest set bit is exact).
func spaceBytes(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x ^= ' ' * ones
	return (x - ones) &^ x & highs
}

func parseStatus(b []byte) (int, bool) {
	if len(b) == 1 && b[0] == '-' {
		return 0, true
	}
	if len(b) != 3 || b[0] == '0' {
		return 0, false
	}
	return digits(b)
}

// parseCount parses a non-negative decimal or "-" (0).
func parseCount(b []byte) (int64, bool) {
	if len(b) == 1 && b[0] == '-' {
		return 0, true
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

var monthIndex = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// parseCLFTime parses "dd/Mon/yyyy:HH:MM:SS +zzzz" (26 bytes) to Unix seconds.
func parseCLFTime(b []byte) (int64, error) {
	if len(b) != 26 || b[2] != '/' || b[6] != '/' || b[11] != ':' || b[14] != ':' || b[17] != ':' || b[20] != ' ' {
		return 0, errors.New("time is not dd/Mon/yyyy:HH:MM:SS +zzzz")
	}
	day, ok1 := digits(b[0:2])
	year, ok2 := digits(b[7:11])
	hh, ok3 := digits(b[12:14])
	mm, ok4 := digits(b[15:17])
	ss, ok5 := digits(b[18:20])
	zh, ok6 := digits(b[22:24])
	zm, ok7 := digits(b[24:26])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return 0, errors.New("time has a non-digit where a digit belongs")
	}
	month := 0
	for i, m := range monthIndex {
		if b[3] == m[0] && b[4] == m[1] && b[5] == m[2] {
			month = i + 1
			break
		}
	}
	if month == 0 {
		return 0, errors.New("time has an unknown month (want Jan..Dec)")
	}
	sign := b[21]
	if sign != '+' && sign != '-' {
		return 0, errors.New("time zone is not +zzzz or -zzzz")
	}
	if day < 1 || day > daysIn(year, month) || hh > 23 || mm > 59 || ss > 60 || zh > 23 || zm > 59 {
		return 0, errors.New("time out of range")
	}
	off := int64(zh*3600 + zm*60)
	if sign == '-' {
		off = -off
	}
	return unixSeconds(year, month, day, hh, mm, ss) - off, nil
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// unixSeconds converts a proleptic Gregorian UTC date and time to Unix
// seconds (days from civil, H. Hinnant).
func unixSeconds(year, month, day, hh, mm, ss int) int64 {
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := int64(month+9) % 12
	doy := (153*mp+2)/5 + int64(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := era*146097 + doe - 719468
	return days*86400 + int64(hh*3600+mm*60+ss)
}
