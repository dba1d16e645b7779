// Package software is the one home of each software a cluster can run
// (S1, S2, L5, L6): what it installs on every node, which command checks it
// on node-0 and how that command's output is read, which machine kinds it
// runs on and how long an install may take. Each software is one file
// (slurm.go, kubernetes.go, ray.go) and one line in registry.go; the
// install job, launch validation and the agent protocol read it from here.
//
// The package generates text and judges text: it runs nothing and stores
// nothing. Configuration files that depend on the cluster's shape
// (slurm.conf, the `ray start` line) come from models/nodespec, parsers from
// models/readiness.
package software

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/models/readiness"
)

// None is the choice of no software: the machines, the private network and
// the node contract only. It has no entry in the registry and no check
// (L5: such a cluster is ready at once).
const None = "none"

// Software is one software a cluster can run.
type Software struct {
	Name  string // as stored on the cluster and sent by the API: "slurm"
	Label string // as shown: "Slurm"
	Help  string // one line for the launch form

	// Kinds are the machine kinds it runs on (nodespec.KindVM, …).
	Kinds []string
	// Window is how long one install attempt may take (L6).
	Window time.Duration

	// Install returns what node in.Rank gets: files written before the
	// script, and the script. Scripts are safe to run twice.
	Install func(in Input) Install
	// CheckCommand is run on node-0 until its output passes Judge (S2).
	CheckCommand string
	// Judge reads CheckCommand's output against the cluster's nodes. An
	// error means the output could not be read: the check failed.
	Judge func(output string, c nodespec.Cluster) (readiness.Report, error)
	// FailingNode names the node a failed report blames, "" for none;
	// nil means the first failing, then the first missing node.
	FailingNode func(rep readiness.Report, c nodespec.Cluster) string

	// HeadReports is true when node-0's install prints blocks (BlockBegin)
	// the server keeps: Kubernetes' join command and kubeconfig.
	HeadReports bool
}

// Input is what an install is generated from.
type Input struct {
	Spec nodespec.Cluster
	Rank int
	Keys Keys   // the cluster's derived secrets
	Join string // what node-0 handed to the others (Kubernetes' join command)
}

// Self is the node being installed.
func (in Input) Self() nodespec.Node {
	for _, n := range in.Spec.Nodes {
		if n.Rank == in.Rank {
			return n
		}
	}
	return nodespec.Node{Rank: in.Rank, Name: nodespec.NodeName(in.Rank)}
}

// Install is one node's install: files (path → content) and a script.
type Install struct {
	Files  map[string]string
	Script string
}

// Keys derives n bytes of a cluster secret for label: the same after a
// restart or on another instance, different for every cluster.
type Keys func(label string, n int) []byte

// RunsOn reports whether the software runs on machines of kind.
func (s *Software) RunsOn(kind string) bool { return slices.Contains(s.Kinds, kind) }

// KindError is the launch form's message when the software does not run
// on kind, "" when it does.
func (s *Software) KindError(kind string) string {
	if s.RunsOn(kind) {
		return ""
	}
	return fmt.Sprintf("%s needs %s machines; this offer runs %ss", s.Label, orList(s.Kinds), kind)
}

// Failing is FailingNode with its default.
func (s *Software) Failing(rep readiness.Report, c nodespec.Cluster) string {
	if s.FailingNode != nil {
		return s.FailingNode(rep, c)
	}
	if f := rep.Failing(); len(f) > 0 {
		return f[0].Node
	}
	if len(rep.Missing) > 0 {
		return rep.Missing[0]
	}
	return ""
}

// BlockBegin and BlockEnd mark what a node reports inside its output; the
// agent keeps lines between them out of its log.
func BlockBegin(name string) string { return "-----BEGIN CLUSTERDECK " + name + "-----" }

// BlockEnd ends a block started with BlockBegin.
func BlockEnd(name string) string { return "-----END CLUSTERDECK " + name + "-----" }

func orList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func nodeNames(c nodespec.Cluster) []string {
	names := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		names[i] = n.Name
	}
	return names
}
