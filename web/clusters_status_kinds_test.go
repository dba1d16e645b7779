package web

import (
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// L4, L6, R2, R5, B6, L8: the cluster page says every
// declared error kind in its own words. Go has no exhaustive switch, so a
// kind added to models.ErrorKinds without a case in problemWords fails here
// (no sample, or the words of an unknown code) instead of reading as "The
// cluster is degraded." on the page.
func TestEveryErrorKindHasItsOwnWords(t *testing.T) {
	samples := map[models.ErrorKind]struct {
		le     models.LastError
		status models.ClusterStatus
	}{
		models.KindTimeout:            {models.StepTimeout(models.StepAgent), models.StatusFailed},
		models.KindNodeLost:           {models.NodeLostAt(models.StepRunning), models.StatusFailed},
		models.KindGPUMismatch:        {models.GPUMismatch("node-1"), models.StatusFailed},
		models.KindProviderRejected:   {models.ProviderRejected(models.RejectedValidation), models.StatusFailed},
		models.KindInstallFailed:      {models.InstallFailed("node-1"), models.StatusDegraded},
		models.KindCheckFailed:        {models.CheckFailed("slurm"), models.StatusDegraded},
		models.KindInstallInterrupted: {models.InstallInterrupted(), models.StatusDegraded},
		models.KindNodeDown:           {models.MachinesDown("node-1: stopped"), models.StatusDegraded},
		models.KindRecoveryExhausted:  {models.RecoveryExhausted(), models.StatusDegraded},
		models.KindResumeFailed:       {models.ResumeFailed(models.StepTimeout(models.StepAgent)), models.StatusStopped},
		models.KindResumeCancelled:    {models.ResumeCancelled(models.StopByBalance), models.StatusStopped},
		models.KindVerifyFailed:       {models.VerificationFailed("node-2"), models.StatusDegraded},
	}
	unknown := map[string]bool{}
	for _, st := range []models.ClusterStatus{models.StatusFailed, models.StatusDegraded} {
		p := problemView(models.Cluster{Status: st, LastError: "exploded:node-1", Software: "slurm"}, nil)
		unknown[p.Sentence] = true
	}
	seen := map[string]models.ErrorKind{}
	for _, k := range models.ErrorKinds {
		s, ok := samples[k]
		if !ok {
			t.Errorf("kind %s: no sample here; give it its words in problemWords and a sample", k)
			continue
		}
		cl := models.Cluster{Status: s.status, LastError: s.le.String(), Software: "slurm", Nodes: 2, LocationName: "Loc"}
		p := problemView(cl, nil)
		switch {
		case p == nil:
			t.Errorf("kind %s on a %s cluster: no problem shown", k, s.status)
		case unknown[p.Sentence] || p.Sentence == "" || p.Advice == "":
			t.Errorf("kind %s reads as an unknown code: %q / %q", k, p.Sentence, p.Advice)
		case seen[p.Sentence] != "":
			t.Errorf("kinds %s and %s say the same: %q", seen[p.Sentence], k, p.Sentence)
		default:
			seen[p.Sentence] = k
			if p.Code != s.le.String() {
				t.Errorf("kind %s: code %q in small print, want %q", k, p.Code, s.le.String())
			}
		}
	}
}
