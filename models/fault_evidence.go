package models

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
)

// What a machine fault rests on (X19). A customer's own machine reports
// its GPUs' errors and beats its heartbeat through its agent, which the
// customer controls: those reports decide the customer's own cluster's
// health (the node goes down, the cluster degraded, and the customer may
// replace the node), but they alone never quarantine a shared machine nor
// mark the public track record. That takes evidence from elsewhere: the
// provider's view (the machine not running, gone), verification's own
// checks (run by Clusterdeck before hand-over), or the same kind of
// reports from at least MinTenantOrgs organisations.
const (
	EvidenceProvider     = "provider"
	EvidenceVerification = "verification"
	EvidenceTenant       = "tenant"

	// MinTenantOrgs is how many organisations' own reports about one
	// machine (within TrackWindow) make them count.
	MinTenantOrgs = 2
)

// EvidenceLabel is an evidence in words, for the operator's pages.
func EvidenceLabel(e string) string {
	switch e {
	case EvidenceVerification:
		return "verification's checks"
	case EvidenceTenant:
		return "the customer's own reports"
	}
	return "the provider's view"
}

// countFault decides whether fault f (just written, a lemon's kind)
// counts, and adds what now counts to the launch records: f itself when
// its evidence is not the customer's alone; when it is, f and the
// machine's other uncounted customer reports of TrackWindow once they come
// from MinTenantOrgs organisations. It reports whether f counts.
func (s *Store) countFault(ctx context.Context, f MachineFault) (bool, error) {
	db := s.db.WithContext(ctx)
	newly := []MachineFault{f}
	if !f.Counted {
		if f.Machine == "" {
			return false, nil
		}
		var pending []MachineFault
		if err := db.Where("provider = ? AND machine = ? AND kind IN ? AND at >= ? AND evidence = ?",
			f.Provider, f.Machine, []string{FaultVerification, FaultDied}, s.Now().Add(-TrackWindow), EvidenceTenant).
			Order("id").Find(&pending).Error; err != nil {
			return false, err
		}
		orgs := map[string]bool{}
		for _, p := range pending {
			orgs[p.OrgID] = true
		}
		if len(orgs) < MinTenantOrgs {
			return false, nil // the customer's own word: its cluster's health only
		}
		newly = newly[:0]
		var ids []int64
		for _, p := range pending {
			if !p.Counted {
				newly = append(newly, p)
				ids = append(ids, p.ID)
			}
		}
		if err := db.Model(&MachineFault{}).Where("id IN ?", ids).Update("counted", true).Error; err != nil {
			return false, err
		}
	}
	for _, n := range newly {
		col := "machine_failures"
		if n.Kind == FaultVerification {
			col = "verify_failures"
		}
		if err := db.Model(&LaunchRecord{}).Where("cluster_id = ?", n.ClusterID).Update(col, gorm.Expr(col+" + 1")).Error; err != nil {
			return false, err
		}
	}
	return true, nil
}

// evidenceSummary says which evidence counted faults rest on: "the
// provider's view, verification's checks" or "the customer's own reports
// from 2 organisations".
func evidenceSummary(faults []MachineFault) string {
	var parts []string
	orgs := map[string]bool{}
	for _, f := range faults {
		e := f.Evidence
		if e == EvidenceTenant {
			orgs[f.OrgID] = true
			continue
		}
		if l := EvidenceLabel(e); !slices.Contains(parts, l) {
			parts = append(parts, l)
		}
	}
	slices.Sort(parts)
	if len(orgs) > 0 {
		parts = append(parts, fmt.Sprintf("the customers' own reports from %d organisations", len(orgs)))
	}
	return strings.Join(parts, ", ")
}
