package views

// VolumesPage is /volumes: the environment's volumes, what each costs and
// accrued, where it is attached, and the create form (V1–V3, X11).
type VolumesPage struct {
	Meta      Meta
	Env       string
	Rows      []VolumeRow
	Form      VolumeForm
	Problems  map[string]string
	Locations []VolumeLocationOption
	Rate      string // "$0.000137/GB-h"
	// Grow is the row whose grow form failed, with its problems.
	GrowID       string
	GrowProblems map[string]string
	// Way is a refusal's way forward beside the size that was refused
	// (Add funds with the shortfall, raise the budget; A4).
	Way *Flash
}

// VolumeForm is what was typed into the create form.
type VolumeForm struct{ Name, Location, SizeGB string }

// VolumeLocationOption is one location of the form's select.
type VolumeLocationOption struct{ ID, Label string }

// VolumeRow is one volume.
type VolumeRow struct {
	ID, Name, Location string
	SizeGB             int
	PerHour            string // "$0.0137/h"
	Accrued            string // "$1.23" since creation (X11)
	Created            string
	ClusterID          string // attached now; "" = detached
	ClusterName        string
	GrowTo             string // the grow form's value
}

// Attached reports whether a cluster holds the volume now.
func (r VolumeRow) Attached() bool { return r.ClusterID != "" }

// growProblems are row r's grow problems keyed by the id the summary links
// to: the size field, or the row while a cluster holds the volume and there
// is no field (A4).
func growProblems(p VolumesPage, r VolumeRow) map[string]string {
	target := "grow-" + r.ID
	if r.Attached() {
		target = "volume-" + r.ID
	}
	out := make(map[string]string, len(p.GrowProblems))
	for _, msg := range p.GrowProblems {
		out[target] = msg
	}
	return out
}
