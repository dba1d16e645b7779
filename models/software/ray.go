package software

import (
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/models/readiness"
)

// Ray: the head on node-0, every other node joined to it; ready when
// `ray status` lists every node healthy (S2).
var Ray = Software{
	Name:  "ray",
	Label: "Ray",
	Help:  "Head on node-0 and every node joined.",
	Kinds: []string{nodespec.KindVM, nodespec.KindBareMetal, nodespec.KindContainer},

	Window:       15 * time.Minute,
	Install:      rayInstall,
	CheckCommand: "ray status",
	// Ray names nodes by ids we never learn: count them.
	Judge: func(output string, c nodespec.Cluster) (readiness.Report, error) {
		return readiness.RayCount(output, len(c.Nodes))
	},
	FailingNode: rayFailingNode,
}

const rayVersion = "2.9.3"

// rayInstall starts the Ray head on node-0 and joins every other node to
// it with --address (nodespec.RayStart).
func rayInstall(in Input) Install {
	return Install{Files: map[string]string{}, Script: "python3 -m pip install -q -U 'ray[default]==" + rayVersion + "'\n" +
		"ray stop --force >/dev/null 2>&1 || true\n" +
		in.Spec.RayStart(in.Rank) + "\n"}
}

// rayFailingNode maps failed nodes, named by address ("(ip: 10.77.0.2)"),
// back to our names; a Ray cluster merely short of nodes names none.
func rayFailingNode(rep readiness.Report, c nodespec.Cluster) string {
	for _, line := range append(append([]string{}, rep.Failures...), rep.Pending...) {
		for _, n := range c.Nodes {
			if strings.Contains(line, "ip: "+n.PrivateIP+")") || strings.HasPrefix(line, n.PrivateIP+":") {
				return n.Name
			}
		}
	}
	return ""
}
