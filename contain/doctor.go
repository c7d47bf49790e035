package contain

// Fact is one thing doctor checked: what it found, and why it matters or why
// it is missing.
type Fact struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Diagnosis is what this host offers for containment.
type Diagnosis struct {
	Facts   []Fact `json:"facts"`
	Backend string `json:"auto_backend"`
	Reason  string `json:"auto_reason"`
}

// add records one fact.
func (d *Diagnosis) add(name string, ok bool, detail string) {
	d.Facts = append(d.Facts, Fact{name, ok, detail})
}
