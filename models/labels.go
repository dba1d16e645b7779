package models

import (
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/models/software"
)

// AcceleratorLabel is an accelerator's name as people read it: "H100_80GB"
// is "H100 80GB". Events and mails use it, never the raw id (O3).
func AcceleratorLabel(a string) string { return strings.ReplaceAll(a, "_", " ") }

// ShapeLabel is the cluster's shape as people read it: "2 × 8 × H100 80GB".
func (c Cluster) ShapeLabel() string {
	return fmt.Sprintf("%d × %d × %s", c.Nodes, c.GPUsPerNode, AcceleratorLabel(c.Accelerator))
}

// PlaceLabel is where the cluster runs as people read it ("Ashburn, VA,
// US"): the location's display name, its id only when it has none.
func (c Cluster) PlaceLabel() string {
	if c.LocationName != "" {
		return c.LocationName
	}
	return c.Location
}

// SoftwareLabel is the software's display name ("Slurm"), "none" for none.
func (c Cluster) SoftwareLabel() string {
	if sw := software.Lookup(c.Software); sw != nil {
		return sw.Label
	}
	if c.Software == "" || c.Software == software.None {
		return "none"
	}
	return c.Software
}
