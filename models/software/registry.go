package software

import (
	"strings"
	"time"
)

// registry lists every software a cluster can run, in the launch form's
// order. A new software is one file and one line here.
var registry = []*Software{
	&Slurm,
	&Kubernetes,
	&Ray,
}

// Lookup returns the software called name; nil for None, "" and unknown
// names.
func Lookup(name string) *Software {
	for _, s := range registry {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// All returns the registered software in order.
func All() []*Software { return append([]*Software(nil), registry...) }

// Choices are the values a launch may ask for: None, then every software.
func Choices() []string {
	out := []string{None}
	for _, s := range registry {
		out = append(out, s.Name)
	}
	return out
}

// Validate returns the launch form's message for software on machines of
// kind, "" when it is fine ("" means None) (S1).
func Validate(name, kind string) string {
	if name == "" || name == None {
		return ""
	}
	s := Lookup(name)
	if s == nil {
		return "choose one of " + strings.Join(Choices(), ", ")
	}
	return s.KindError(kind)
}

// Window is how long one install attempt of name may take.
func Window(name string) time.Duration {
	if s := Lookup(name); s != nil {
		return s.Window
	}
	return defaultWindow
}

const defaultWindow = 15 * time.Minute

// Register adds s to the registry until the returned function is called.
// It is for tests that prove the registry is the only place a software is
// declared; the server never calls it.
func Register(s *Software) (remove func()) {
	registry = append(registry, s)
	return func() {
		for i, r := range registry {
			if r == s {
				registry = append(registry[:i], registry[i+1:]...)
				return
			}
		}
	}
}
