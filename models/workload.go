package models

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
)

// Workload is what a launch adds to a quote: settings that are identical on
// every node and never change the price (N3, Q5).
type Workload struct {
	Name         string
	Software     string
	Image        string
	StartCommand string
	Env          map[string]string
	Ports        []int
}

var (
	nameRe   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	envKeyRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Workload limits.
const (
	maxEnvVars  = 64
	maxEnvValue = 4096
	maxPorts    = 32
)

// Validate returns field problems keyed by the API's JSON names. Kubernetes
// needs vm or bare_metal machines (S1).
func (w Workload) Validate(machineKind string) FieldErrors {
	fe := FieldErrors{}
	if !nameRe.MatchString(w.Name) {
		fe["name"] = "1 to 63 lower-case letters, digits and dashes, starting and ending with a letter or digit"
	}
	for k, v := range ValidateSoftware(w.Software, machineKind) {
		fe[k] = v
	}
	if len(w.Image) > 255 || strings.ContainsAny(w.Image, " \t\n") {
		fe["image"] = "an image name without spaces, at most 255 characters"
	}
	if len(w.StartCommand) > 4000 || strings.ContainsRune(w.StartCommand, 0) {
		fe["startCommand"] = "at most 4,000 characters"
	}
	if len(w.Env) > maxEnvVars {
		fe["env"] = fmt.Sprintf("at most %d variables", maxEnvVars)
	}
	keys := make([]string, 0, len(w.Env))
	for k := range w.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := w.Env[k]
		switch {
		case !envKeyRe.MatchString(k):
			fe["env"] = fmt.Sprintf("%q is not a variable name (letters, digits and _, not starting with a digit)", k)
		case nodespec.IsReservedEnv(k):
			fe["env"] = fmt.Sprintf("%s is set by Clusterdeck on every node (N2); choose another name", k)
		case len(v) > maxEnvValue || strings.ContainsRune(v, 0):
			fe["env"] = fmt.Sprintf("the value of %s is too long or holds a NUL byte", k)
		}
		if fe["env"] != "" {
			break
		}
	}
	if len(w.Ports) > maxPorts {
		fe["ports"] = fmt.Sprintf("at most %d ports", maxPorts)
	}
	seen := map[int]bool{}
	for _, p := range w.Ports {
		if p < 1 || p > 65535 || seen[p] {
			fe["ports"] = "ports are distinct numbers from 1 to 65535"
			break
		}
		seen[p] = true
	}
	return fe
}

// PortsPublished reports whether the workload's ports are reachable from
// outside the cluster (N3): on vm and bare_metal machines with public
// addresses the agent opens them in each machine's firewall. Container
// machines share their host's address, which forwards only SSH, and sites
// without public addresses are reached through their gateway: there the
// ports are open between the nodes only, and an SSH tunnel reaches them.
func (c Cluster) PortsPublished() bool {
	return c.PublicIPs && (c.MachineKind == nodespec.KindVM || c.MachineKind == nodespec.KindBareMetal)
}
