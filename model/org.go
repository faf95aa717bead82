package model

// orgIDs returns each client's organisation id (key org): clients naming
// the same org share an id, numbered in order of first appearance; a client
// without one has an id of its own.
func (s *Scenario) orgIDs() []int32 {
	ids := make([]int32, len(s.Clients))
	at := map[string]int32{}
	next := int32(0)
	for i, c := range s.Clients {
		if c.Keys.Org != "" {
			if id, ok := at[c.Keys.Org]; ok {
				ids[i] = id
				continue
			}
			at[c.Keys.Org] = next
		}
		ids[i] = next
		next++
	}
	return ids
}

// orgCount is the number of the scenario's organisations (key org).
func (s *Scenario) orgCount() int {
	n := 0
	for _, id := range s.orgIDs() {
		n = max(n, int(id)+1)
	}
	return n
}
