package ingest

// SchemaDefs returns JSON Schema definitions of a traffic section
// ("traffic", "columns", "rule"), built from the field lists and names the
// decoder checks against (see sweep.Schema).
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
	return map[string]any{
		"traffic": map[string]any{
			"type":                 "object",
			"description":          "An access log to replay: how to read, key and label it.",
			"additionalProperties": false,
			"required":             []string{"log"},
			"propertyNames":        map[string]any{"enum": trafficKeys},
			"properties": map[string]any{
				"log":            map[string]any{"type": "string", "minLength": 1, "description": "the log file, relative to the spec; plain or gzip"},
				"format":         map[string]any{"enum": formatNames, "default": FormatAuto.String()},
				"csv":            table(csvKeys, "format csv: the columns"),
				"parquet":        table(csvKeys[1:], "format parquet: the columns"),
				"key":            map[string]any{"oneOf": []any{key, map[string]any{"type": "array", "items": key, "minItems": 1}}, "description": "the rate-limit key: a field or a list joined into one key"},
				"path_depth":     map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 1},
				"spread":         map[string]any{"enum": spreadNames, "default": spreadNames[0]},
				"strict":         map[string]any{"type": "boolean", "default": false},
				"max_line_bytes": map[string]any{"type": "integer", "minimum": 256, "maximum": 64 << 20, "default": DefaultMaxLineBytes},
				"top_keys":       map[string]any{"type": "integer", "minimum": 0, "maximum": 100_000, "default": DefaultTopKeys},
				"window_origin":  map[string]any{"enum": windowOriginNames, "default": windowOriginNames[0], "description": "where windows start: on the Unix epoch (default) or at the log's first second"},
				"rules": map[string]any{"oneOf": []any{
					str, map[string]any{"type": "array", "maxItems": MaxRules, "items": map[string]any{"$ref": "#/$defs/rule"}},
				}, "description": "labelling rules, or a YAML file with rules: [...]"},
			},
			"allOf": []any{
				map[string]any{"if": map[string]any{"properties": map[string]any{"format": map[string]any{"const": "csv"}}, "required": []string{"format"}},
					"then": map[string]any{"required": []string{"csv"}}, "else": map[string]any{"not": map[string]any{"required": []string{"csv"}}}},
				map[string]any{"if": map[string]any{"properties": map[string]any{"format": map[string]any{"const": "parquet"}}, "required": []string{"format"}},
					"then": map[string]any{"required": []string{"parquet"}}, "else": map[string]any{"not": map[string]any{"required": []string{"parquet"}}}},
			},
		},
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
