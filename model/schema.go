package model

// SchemaDefs returns JSON Schema definitions of a scenario ("scenario",
// "client", "arrivals", "segment"), built from the field lists and names the
// decoder checks against, so editors complete and check what it accepts
// (sweep.Schema assembles the whole schema; its test keeps both in step).
func SchemaDefs() map[string]any {
	stages := []string{"design", "code", "none"}
	return map[string]any{
		"scenario": map[string]any{
			"type":                 "object",
			"description":          "A traffic model: clients with request rates over time, legitimate or abusive.",
			"additionalProperties": false,
			"required":             []string{"name", "duration_s", "clients"},
			"propertyNames":        map[string]any{"enum": scenarioKeys},
			"properties": map[string]any{
				"name":       map[string]any{"type": "string", "minLength": 1},
				"duration_s": map[string]any{"type": "integer", "minimum": 1, "maximum": MaxDurationS, "description": "length of the scenario, seconds"},
				"arrivals":   map[string]any{"$ref": "#/$defs/arrivals"},
				"clients":    map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/client"}},
			},
		},
		"arrivals": map[string]any{
			"description": "how each second's requests arrive inside it (default fluid: all together)",
			"oneOf": []any{
				map[string]any{"enum": without(arrivalNames, "clustered")},
				map[string]any{
					"type":                 "object",
					"additionalProperties": false,
					"required":             []string{"process"},
					"propertyNames":        map[string]any{"enum": arrivalKeys},
					"properties": map[string]any{
						"process":    map[string]any{"enum": arrivalNames},
						"burst_size": map[string]any{"type": "integer", "minimum": 1, "maximum": 1<<31 - 1, "description": "requests per burst"},
						"spread_s":   map[string]any{"type": "number", "description": "spread of a burst, seconds"},
					},
					"if":   map[string]any{"properties": map[string]any{"process": map[string]any{"const": "clustered"}}},
					"then": map[string]any{"required": []string{"burst_size", "spread_s"}},
					"else": map[string]any{"not": map[string]any{"anyOf": []any{
						map[string]any{"required": []string{"burst_size"}}, map[string]any{"required": []string{"spread_s"}}}}},
				},
			},
		},
		"client": map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []string{"name", "class", "segments"},
			"propertyNames":        map[string]any{"enum": clientKeys},
			"properties": map[string]any{
				"name":         map[string]any{"type": "string", "minLength": 1},
				"class":        map[string]any{"enum": []string{"legit", "abusive"}},
				"stage":        map[string]any{"enum": append(stages, "-", "–"), "description": "abusive clients only: design | code | none"},
				"segments":     map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/segment"}},
				"addresses":    map[string]any{"type": "integer", "minimum": 1, "maximum": MaxKeys},
				"accounts":     map[string]any{"type": "integer", "minimum": 1, "maximum": MaxKeys},
				"address_pool": map[string]any{"type": "string", "minLength": 1},
				"account_pool": map[string]any{"type": "string", "minLength": 1},
				"spread":       map[string]any{"enum": spreadNames},
				"on_reject":    onRejectSchema(),
				"throttle":     throttleSchema(),
				"cost":         map[string]any{"type": "integer", "minimum": 1, "maximum": MaxCost, "default": 1, "description": "units each request costs (docs/costs.md)"},
				"fail_share":   map[string]any{"type": "number", "minimum": 0, "maximum": 1, "default": 0, "description": "share of requests whose response fails (for count_if)"},
				"fail_status":  map[string]any{"type": "integer", "minimum": MinStatus, "maximum": MaxStatus, "default": DefaultFailStatus, "description": "a failing response's status; others answer 200"},
				"org":          map[string]any{"type": "string", "minLength": 1, "description": "the client's organisation: clients naming the same org share the key org"},
			},
			"if":   map[string]any{"properties": map[string]any{"class": map[string]any{"const": "legit"}}},
			"then": map[string]any{"properties": map[string]any{"stage": map[string]any{"enum": []string{"-", "–"}}}},
		},
		"segment": map[string]any{
			"type":        "array",
			"description": "[t0, t1, requests per second], t0 <= t < t1",
			"prefixItems": []any{
				map[string]any{"type": "integer"}, map[string]any{"type": "integer"}, map[string]any{"type": "number"},
			},
			"minItems": 3, "maxItems": 3,
		},
	}
}

func without(xs []string, x string) []string {
	var out []string
	for _, s := range xs {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}
