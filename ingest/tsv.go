package ingest

import (
	"bytes"
	"errors"
)

// nasaHeader is the header line of the NASA KSC TSV.
var nasaHeader = []byte("host\tlogname\ttime\tmethod\turl\tresponse\tbytes\treferer\tuseragent")

// ParseNASATSV parses one line of the NASA KSC TSV (9 tab-separated fields:
// host, logname, time in Unix seconds, method, url, response, bytes, referer,
// useragent) into rec.
func ParseNASATSV(line []byte, rec *Record) error {
	rec.reset()
	var f [9][]byte
	n := 0
	for n < 8 {
		i := bytes.IndexByte(line, '\t')
		if i < 0 {
			break
		}
		f[n], line = line[:i], line[i+1:]
		n++
	}
	f[n] = line
	n++
	if n != 9 || bytes.IndexByte(line, '\t') >= 0 {
		return errors.New("want 9 tab-separated fields (host, logname, time, method, url, response, bytes, referer, useragent)")
	}
	if len(f[0]) == 0 {
		return errors.New("empty host")
	}
	rec.Host, rec.Logname = f[0], f[1]
	t, ok := parseCount(f[2])
	if !ok || len(f[2]) == 1 && f[2][0] == '-' {
		return errors.New("time is not Unix seconds")
	}
	rec.Time = t
	rec.Method, rec.Path = f[3], f[4]
	if rec.Status, ok = parseStatus(f[5]); !ok {
		return errors.New("response is not 100..999 or -")
	}
	if len(f[6]) == 0 {
		rec.Bytes = 0
	} else if rec.Bytes, ok = parseCount(f[6]); !ok {
		return errors.New("bytes is not a number or -")
	}
	rec.Referer, rec.UserAgent = f[7], f[8]
	return nil
}
