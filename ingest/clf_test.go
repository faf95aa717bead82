package ingest

import (
	"strings"
	"testing"
	"time"
)

func TestParseCombined(t *testing.T) {
	cases := []struct {
		line                     string
		host, user, method, path string
		proto, referer, ua       string
		time                     string // RFC 3339, UTC
		status                   int
		bytes                    int64
	}{
		{`64.221.136.91 - - [02/Sep/2003:00:00:09 -0700] "GET / HTTP/1.1" 200 11690 "-" "Mozilla/4.0 (compatible; MSIE 6.0)"`,
			"64.221.136.91", "-", "GET", "/", "HTTP/1.1", "-", "Mozilla/4.0 (compatible; MSIE 6.0)", "2003-09-02T07:00:09Z", 200, 11690},
		// Common Log Format, positive zone, "-" bytes, authenticated user.
		{`10.0.0.1 - frank [10/Oct/2000:13:55:36 +0230] "POST /login?x=1 HTTP/1.0" 401 -`,
			"10.0.0.1", "frank", "POST", "/login?x=1", "HTTP/1.0", "", "", "2000-10-10T11:25:36Z", 401, 0},
		// Escaped quotes inside the request and the user agent; extra Nginx fields.
		{`::1 - - [29/Feb/2024:23:59:59 +0000] "GET /a\"b HTTP/1.1" 404 12 "http://x/" "curl \"7\"" 0.003 "-"`,
			"::1", "-", "GET", `/a\"b`, "HTTP/1.1", "http://x/", `curl \"7\"`, "2024-02-29T23:59:59Z", 404, 12},
		// Junk request, status "-", several spaces.
		{`host  -  -  [01/Jan/1999:00:00:00 -1200]  "-"  -  -`,
			"host", "-", "-", "", "", "", "", "1999-01-01T12:00:00Z", 0, 0},
		// A user agent cut off at the end of the line.
		{`1.2.3.4 - - [20/May/2015:12:05:17 +0000] "GET /a HTTP/1.1" 200 235 "-" "Mozilla/5.0 (compatible; Googlebot/2.1`,
			"1.2.3.4", "-", "GET", "/a", "HTTP/1.1", "-", "Mozilla/5.0 (compatible; Googlebot/2.1", "2015-05-20T12:05:17Z", 200, 235},
	}
	for i, c := range cases {
		var r Record
		if err := ParseCombined([]byte(c.line), &r); err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		want, _ := time.Parse(time.RFC3339, c.time)
		got := []string{string(r.Host), string(r.User), string(r.Method), string(r.Path), string(r.Proto), string(r.Referer), string(r.UserAgent)}
		exp := []string{c.host, c.user, c.method, c.path, c.proto, c.referer, c.ua}
		if strings.Join(got, "|") != strings.Join(exp, "|") || r.Time != want.Unix() || r.Status != c.status || r.Bytes != c.bytes {
			t.Errorf("case %d:\n got %q time %d status %d bytes %d\nwant %q time %d status %d bytes %d",
				i, got, r.Time, r.Status, r.Bytes, exp, want.Unix(), c.status, c.bytes)
		}
	}
}

func TestParseCombinedRejects(t *testing.T) {
	cases := []struct{ line, want string }{
		{``, "missing host"},
		{`1.2.3.4`, "missing identity"},
		{`1.2.3.4 - - 02/Sep/2003:00:00:09 -0700 "GET / HTTP/1.1" 200 1`, "missing [dd/Mon"},
		{`1.2.3.4 - - [02/Sept/2003:00:00:09 -0700] "GET / HTTP/1.1" 200 1`, "missing [dd/Mon"},
		{`1.2.3.4 - - [02/Sep/2003:00:00:09 07000] "GET / HTTP/1.1" 200 1`, "zone"},
		{`1.2.3.4 - - [31/Feb/2003:00:00:09 -0700] "GET / HTTP/1.1" 200 1`, "out of range"},
		{`1.2.3.4 - - [02/Foo/2003:00:00:09 -0700] "GET / HTTP/1.1" 200 1`, "unknown month"},
		{`1.2.3.4 - - [02/Sep/2003:0a:00:09 -0700] "GET / HTTP/1.1" 200 1`, "non-digit"},
		{`1.2.3.4 - - [02/Sep/2003:24:00:09 -0700] "GET / HTTP/1.1" 200 1`, "out of range"},
		{`1.2.3.4 - - [02/Sep/2003:00:00:09 -0700] GET / HTTP/1.1 200 1`, "request: expected a quoted"},
		{`1.2.3.4 - - [02/Sep/2003:00:00:09 -0700] "GET / HTTP/1.1 200 1`, "unterminated"},
		{`1.2.3.4 - - [02/Sep/2003:00:00:09 -0700] "GET / HTTP/1.1" 2000 1`, "status"},
		{`1.2.3.4 - - [02/Sep/2003:00:00:09 -0700] "GET / HTTP/1.1" 200`, "missing bytes"},
		{`1.2.3.4 - - [02/Sep/2003:00:00:09 -0700] "GET / HTTP/1.1" 200 1x`, "bytes"},
		{`1.2.3.4 - - [02/Sep/2003:00:00:09 -0700] "GET / HTTP/1.1" 200 1 "-"`, "missing user agent"},
		{`1.2.3.4 - - [02/Sep/2003:00:00:09 -0700] "GET / HTTP/1.1" 200 1 - -`, "referer"},
	}
	for _, c := range cases {
		var r Record
		err := ParseCombined([]byte(c.line), &r)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.line, err, c.want)
		}
	}
}

// parseCLFTime agrees with the time package for every zone and leap day.
func TestParseCLFTimeAgreesWithTime(t *testing.T) {
	for _, s := range []string{"01/Jan/1970:00:00:00 +0000", "29/Feb/2000:12:34:56 -0930", "31/Dec/2262:23:59:59 +1400",
		"28/Feb/1900:01:02:03 +0100", "01/Mar/2100:00:00:00 -0000", "15/Jun/1969:10:00:00 +0000"} {
		want, err := time.Parse("02/Jan/2006:15:04:05 -0700", s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseCLFTime([]byte(s))
		if err != nil || got != want.Unix() {
			t.Errorf("%s: %d %v, want %d", s, got, err, want.Unix())
		}
	}
}

func TestParseNASATSV(t *testing.T) {
	var r Record
	if err := ParseNASATSV([]byte("pppa006.compuserve.com\t-\t807256800\tGET\t/images/launch-logo.gif\t200\t1713\t\t"), &r); err != nil {
		t.Fatal(err)
	}
	if string(r.Host) != "pppa006.compuserve.com" || r.Time != 807256800 || string(r.Method) != "GET" ||
		string(r.Path) != "/images/launch-logo.gif" || r.Status != 200 || r.Bytes != 1713 {
		t.Errorf("got %+v", r)
	}
	for _, bad := range []string{"a\tb\tc", "h\t-\tx\tGET\t/\t200\t1\t\t", "h\t-\t1\tGET\t/\t20\t1\t\t", "\t-\t1\tGET\t/\t200\t1\t\t", "h\t-\t1\tGET\t/\t200\t1\t\t\t"} {
		if err := ParseNASATSV([]byte(bad), &r); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPathPrefix(t *testing.T) {
	for _, c := range []struct {
		path  string
		depth int
		want  string
	}{{"/a/b/c?x=/y", 1, "/a"}, {"/a/b/c?x", 2, "/a/b"}, {"/a", 3, "/a"}, {"", 1, "/"}, {"/?q", 1, "/"}, {"/a/b/", 2, "/a/b"}} {
		if got := string(pathPrefix([]byte(c.path), c.depth)); got != c.want {
			t.Errorf("pathPrefix(%q, %d) = %q, want %q", c.path, c.depth, got, c.want)
		}
	}
}
