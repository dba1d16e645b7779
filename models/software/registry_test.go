package software

import (
	"slices"
	"testing"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
)

// Every registered software says everything the server asks of it.
func TestRegistryComplete(t *testing.T) {
	seen := map[string]bool{None: true}
	for _, s := range All() {
		if seen[s.Name] || !nodespecName(s.Name) {
			t.Errorf("%q: duplicate or malformed name", s.Name)
		}
		seen[s.Name] = true
		if s.Label == "" || s.Help == "" || len(s.Kinds) == 0 || s.Window <= 0 ||
			s.Install == nil || s.CheckCommand == "" || s.Judge == nil {
			t.Errorf("%s is incomplete: %+v", s.Name, s)
		}
		for _, k := range s.Kinds {
			if !slices.Contains([]string{nodespec.KindVM, nodespec.KindBareMetal, nodespec.KindContainer}, k) {
				t.Errorf("%s runs on unknown kind %q", s.Name, k)
			}
		}
	}
	if got := Choices(); !slices.Equal(got, []string{"none", "slurm", "kubernetes", "ray"}) {
		t.Errorf("Choices() = %v", got)
	}
}

func nodespecName(name string) bool {
	c := nodespec.Cluster{Software: name}
	err := c.Validate()
	if err == nil {
		return true
	}
	for _, fe := range err.(nodespec.ValidationError) {
		if fe.Field == "software" {
			return false
		}
	}
	return true
}

func TestRegisterRemoves(t *testing.T) {
	fake := &Software{Name: "fake"}
	remove := Register(fake)
	if Lookup("fake") != fake || Validate("fake", "vm") == "" {
		t.Error("registered software not found, or found running on vm without Kinds")
	}
	remove()
	if Lookup("fake") != nil || len(All()) != 3 {
		t.Error("Register's remove left the software registered")
	}
}
