package ingest

import (
	"maps"
	"slices"

	"github.com/ratesweep/ratesweep/model"
)

// SchemaDefs returns JSON Schema definitions of a traffic section
// ("traffic", "columns", "rule"), built from the field lists and names the
// decoder checks against (see sweep.Schema). It is one table of the
// section's fields, in the decoder's order.
func SchemaDefs() map[string]any {
	str := map[string]any{"type": "string", "minLength": 1}
	strs := map[string]any{"oneOf": []any{str, map[string]any{"type": "array", "items": str, "minItems": 1}}}
	status := map[string]any{"oneOf": []any{
		map[string]any{"type": "integer", "minimum": 100, "maximum": 599},
		map[string]any{"type": "string", "pattern": `^\s*([1-5]xx|[1-5][0-9][0-9](-[1-5][0-9][0-9])?)\s*$`},
	}}
	columns := map[string]any{}
	for _, f := range CSVColumnFields {
		columns[f] = str
	}
	table := func(keys []string, desc string) map[string]any {
		props := map[string]any{
			"time_format": map[string]any{"enum": timeFormatNames},
			"columns":     map[string]any{"$ref": "#/$defs/columns"},
		}
		if keys[0] == "delimiter" {
			props["delimiter"] = map[string]any{"type": "string", "description": `one byte other than a quote or newline; \t for tab`}
		}
		return map[string]any{
			"type": "object", "description": desc, "additionalProperties": false,
			"required": []string{"columns"}, "propertyNames": map[string]any{"enum": keys}, "properties": props,
		}
	}
	key := map[string]any{"enum": FieldNames}
	jsonl := table(csvKeys[1:], "format jsonl or a JSON lines preset: field paths of each column (a preset's columns may be left out)")
	jsonl["required"] = []string{}
	return map[string]any{
		"traffic": map[string]any{
			"type":                 "object",
			"description":          "An access log to replay: how to read, key and label it.",
			"additionalProperties": false,
			"required":             []string{"log"},
			"propertyNames":        map[string]any{"enum": trafficKeys},
			"properties": map[string]any{
				"log": map[string]any{"oneOf": []any{
					map[string]any{"type": "string", "minLength": 1, "description": "the log file, relative to the spec; plain or compressed (gzip, zstd, bzip2, xz)"},
					map[string]any{"type": "array", "items": str, "minItems": 2, "maxItems": MaxLogs, "description": "several logs (days), one per replicate"},
					map[string]any{"type": "object", "additionalProperties": false, "required": []string{"files", "as"},
						"description": "one log in several files (a rotated set), read as one",
						"properties": map[string]any{
							"files": map[string]any{"oneOf": []any{
								map[string]any{"type": "string", "minLength": 1, "description": "a glob pattern: its files ordered by rotation suffix (access.log.2.gz before access.log.1 before access.log), then modification time"},
								map[string]any{"type": "array", "items": str, "minItems": 1, "maxItems": MaxSetFiles, "description": "the files, oldest first"},
							}},
							"as": map[string]any{"const": "one"},
						}},
				}},
				"format":           map[string]any{"enum": formatNames, "default": FormatAuto.String()},
				"csv":              table(csvKeys, "format csv: the columns"),
				"parquet":          table(csvKeys[1:], "format parquet: the columns"),
				"jsonl":            jsonl,
				"nginx_log_format": map[string]any{"type": "string", "minLength": 1, "description": "format nginx: the log_format string, read by its variables ($msec, $time_iso8601, $time_local, $remote_addr, $http_x_forwarded_for, $request, $status, ...)"},
				"envoy_format":     map[string]any{"type": "string", "minLength": 1, "description": "format envoy-text: the access log format string (%START_TIME%, %REQ(:METHOD)%, ...)"},
				"haproxy_format":   map[string]any{"type": "string", "minLength": 1, "description": "format haproxy: the log-format string (%ci, %tr, %ST, %{+Q}r, ...)"},
				"trusted_proxies":  map[string]any{"oneOf": []any{str, map[string]any{"type": "array", "items": str, "minItems": 1}}, "description": "addresses or CIDR prefixes of proxies in front of the server: the key ip is the first X-Forwarded-For hop from the right not among them"},
				"max_backwards_s": map[string]any{"type": "integer", "minimum": -1, "maximum": 1 << 40, "not": map[string]any{"const": 0},
					"default": DefaultMaxBackS, "description": "a line this many seconds before the latest is malformed (-1: no bound); smaller steps back are sorted"},
				"key":            map[string]any{"oneOf": []any{key, map[string]any{"type": "array", "items": key, "minItems": 1}}, "description": "the rate-limit key: a field or a list joined into one key"},
				"path_depth":     map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 1},
				"spread":         map[string]any{"enum": spreadNames, "default": spreadNames[0]},
				"strict":         map[string]any{"type": "boolean", "default": false},
				"max_line_bytes": map[string]any{"type": "integer", "minimum": 256, "maximum": 64 << 20, "default": DefaultMaxLineBytes},
				"top_keys":       map[string]any{"type": "integer", "minimum": 0, "maximum": 100_000, "default": DefaultTopKeys},
				"window_origin":  map[string]any{"enum": windowOriginNames, "default": windowOriginNames[0], "description": "where windows start: on the Unix epoch (default) or at the log's first second"},
				"cost":           costSchema(),
				"reactions":      reactionsSchema(strs),
				"rules": map[string]any{"oneOf": []any{
					str, map[string]any{"type": "array", "maxItems": MaxRules, "items": map[string]any{"$ref": "#/$defs/rule"}},
				}, "description": "labelling rules, or a YAML file with rules: [...]"},
			},
			"allOf": []any{
				map[string]any{"if": map[string]any{"properties": map[string]any{"format": map[string]any{"const": "jsonl"}}, "required": []string{"format"}},
					"then": map[string]any{"required": []string{"jsonl"}}},
				map[string]any{"if": map[string]any{"not": map[string]any{"properties": map[string]any{"format": map[string]any{"enum": jsonFormatNames()}}, "required": []string{"format"}}},
					"then": map[string]any{"not": map[string]any{"required": []string{"jsonl"}}}},
				map[string]any{"if": map[string]any{"properties": map[string]any{"format": map[string]any{"const": "csv"}}, "required": []string{"format"}},
					"then": map[string]any{"required": []string{"csv"}}, "else": map[string]any{"not": map[string]any{"required": []string{"csv"}}}},
				map[string]any{"if": map[string]any{"properties": map[string]any{"format": map[string]any{"const": "parquet"}}, "required": []string{"format"}},
					"then": map[string]any{"required": []string{"parquet"}}, "else": map[string]any{"not": map[string]any{"required": []string{"parquet"}}}},
			},
		},
		"overlay": overlaySchema(),
		"columns": map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"time"},
			"propertyNames": map[string]any{"enum": CSVColumnFields}, "properties": columns,
		},
		"rule": map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []string{"name", "stage"},
			"propertyNames":        map[string]any{"enum": ruleKeys},
			"properties": map[string]any{
				"name":       str,
				"stage":      map[string]any{"enum": []string{"design", "code", "none"}},
				"scope":      map[string]any{"enum": []string{"key", "request"}},
				"path":       map[string]any{"type": "string", "minLength": 1, "description": "Go regular expression"},
				"user_agent": map[string]any{"type": "string", "minLength": 1, "description": "Go regular expression"},
				"method":     strs,
				"status":     map[string]any{"oneOf": []any{status, map[string]any{"type": "array", "items": status, "minItems": 1}}},
				"keys":       strs,
				"keys_file":  str,
				"limit_req_status": map[string]any{"description": "nginx $limit_req_status values (a dry run's decision), logged after the user agent",
					"oneOf": []any{map[string]any{"enum": LimitReqStatuses}, map[string]any{"type": "array", "items": map[string]any{"enum": LimitReqStatuses}, "minItems": 1}}},
				"rate": map[string]any{
					"type": "object", "additionalProperties": false, "required": rateKeys,
					"propertyNames": map[string]any{"enum": rateKeys},
					"properties": map[string]any{
						"requests": map[string]any{"type": "integer", "minimum": 1, "maximum": 1 << 31},
						"window_s": map[string]any{"type": "integer", "minimum": 1, "maximum": 1 << 31},
					},
				},
			},
		},
	}
}

// jsonFormatNames are the formats that take a jsonl: section (jsonl and its presets).
func jsonFormatNames() []string {
	var out []string
	for i := range formatNames {
		if f := Format(i); f.IsJSON() {
			out = append(out, f.String())
		}
	}
	return out
}

// overlaySchema is the scenario language (model's "scenario" definition)
// plus the overlay's own fields.
func overlaySchema() map[string]any {
	sc := model.SchemaDefs()["scenario"].(map[string]any)
	o := maps.Clone(sc)
	props := maps.Clone(sc["properties"].(map[string]any))
	names := slices.Clone(sc["propertyNames"].(map[string]any)["enum"].([]string))
	o["description"] = "Clients in the scenario language placed on the log's clock: attacks the log does not hold."
	props["start_s"] = map[string]any{"type": "integer", "minimum": 0, "maximum": 100 * 365 * 86400, "description": "seconds after the log's first second where the overlay starts"}
	props["keys"] = map[string]any{"type": "object", "description": "per client: top:N (the log's N busiest keys) or a list of log keys to share",
		"additionalProperties": map[string]any{"oneOf": []any{
			map[string]any{"type": "string", "pattern": `^top:[0-9]+$`},
			map[string]any{"type": "array", "items": map[string]any{"type": "string", "minLength": 1}, "minItems": 1},
		}}}
	props["aim"] = map[string]any{"type": "object", "description": "per client: bursts timed to fixed-window edges",
		"additionalProperties": map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"window_s"},
			"properties": map[string]any{
				"window_s": map[string]any{"type": "integer", "minimum": 1, "maximum": 86400},
				"spread_s": map[string]any{"type": "number", "exclusiveMinimum": 0, "default": 0.5},
			},
		}}
	o["properties"] = props
	o["propertyNames"] = map[string]any{"enum": append(names, overlayExtraKeys...)}
	return o
}
