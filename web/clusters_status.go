package web

import (
	"fmt"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/software"
	"github.com/clusterdeck/clusterdeck/views"
)

// The cluster page's words for states, progress and errors (L4, L6, L8,
// L11, R2, R5): one vocabulary, derived from the cluster's status and each
// node's step, so the page never says two things at once.

// releasedNothingBilled ends every sentence about a cluster that failed to start (L4).
const releasedNothingBilled = "every machine was released and nothing was billed"

// stepDoing is what a node does while it waits for step.
func stepDoing(step string) string {
	switch step {
	case models.StepRunning:
		return "booting"
	case models.StepAgent:
		return "starting its cluster agent"
	case models.StepMesh:
		return "joining the private network"
	case models.StepSoftware:
		return "installing its software"
	case models.StepReserved:
		return "being reserved"
	}
	return "starting"
}

// softwareLabel names the cluster's software for people ("Slurm").
func softwareLabel(name string) string {
	if sw := software.Lookup(name); sw != nil {
		return sw.Label
	}
	return name
}

// nodeNamed returns the node of status st, or "" when none is.
func nodeNamed(nodes []models.ClusterNode, st ...models.NodeStatus) string {
	for _, n := range nodes {
		for _, s := range st {
			if n.Status == s {
				return n.Name
			}
		}
	}
	return ""
}

// problemView says a cluster's lastError as a sentence, with what happens
// to billing and what the customer can do; the code stays in small print.
// nil when the cluster has no error to show. It switches on the error's
// kind (models.ErrorKinds); a test holds that every kind has its own words.
func problemView(cl models.Cluster, nodes []models.ClusterNode) *views.ProblemView {
	le := cl.Problem()
	if !cl.Lifecycle().ProblemShown() {
		return nil
	}
	p := &views.ProblemView{Code: cl.LastError, Tone: string(cl.Status)}
	p.Sentence, p.Advice = problemWords(cl, le, nodes)
	if cl.Lifecycle().TerminateAsked() {
		p.Advice = "Terminating: every machine is being released and billing has stopped."
	}
	return p
}

// problemWords is the sentence and the advice for one lastError.
func problemWords(cl models.Cluster, le models.LastError, nodes []models.ClusterNode) (sentence, advice string) {
	who := func(fallback string) string {
		if n := nodeNamed(nodes, models.NodeFailed, models.NodeLost); n != "" {
			return n
		}
		return fallback
	}
	sw := softwareLabel(cl.Software)
	rate := models.PriceUSD(cl.USDPerHour) + "/h"
	retry := "The machines stay up and billing continues at " + rate + ". Retry the install, or terminate the cluster to stop billing."
	stopped := "Compute billing stays ended and nothing is deleted. Resume the cluster again, or terminate it."
	detail := le.Detail
	switch le.Kind {
	case models.KindTimeout:
		switch detail {
		case models.StepReserved:
			sentence = "The provider did not accept the reservation in time"
		case models.StepRunning:
			sentence = who("A machine") + " did not finish booting in time"
		case models.StepAgent:
			sentence = who("A machine") + " booted but its cluster agent never checked in"
		case models.StepMesh:
			sentence = who("A machine") + " did not reach every other machine on the private network in time"
		default:
			sentence = who("A machine") + " did not finish " + stepDoing(detail) + " in time"
		}
		return sentence + "; " + releasedNothingBilled + ".", failedAdvice(0)
	case models.KindNodeLost:
		return who("A machine") + " vanished at the provider while " + stepDoing(detail) + "; " + releasedNothingBilled + ".", failedAdvice(0)
	case models.KindGPUMismatch:
		return detail + " does not have the GPUs the offer promises; " + releasedNothingBilled + ".", failedAdvice(0)
	case models.KindProviderRejected:
		if detail == models.RejectedNoCapacity {
			return fmt.Sprintf("The provider no longer had %d machines of this shape free in %s; %s.", cl.Nodes, cl.LocationName, releasedNothingBilled), failedAdvice(0)
		}
		return "The provider refused the reservation (the offer changed or is no longer available); " + releasedNothingBilled + ".", failedAdvice(0)
	case models.KindRecoveryExhausted:
		return "Every recovery attempt is spent and a machine is still down.",
			"Billing continues at " + rate + " for every machine. Terminate the cluster to stop it, or try Recover now."
	case models.KindNodeDown:
		return "A machine stopped running: " + detail + ".",
			"The other machines stay up and billing continues at " + rate + " for every machine. " +
				"Recovery can restart it (see Recovery below), or terminate the cluster to stop billing."
	case models.KindInstallFailed:
		if detail == models.InstallConfig {
			return sw + " cannot be set up for this cluster's configuration.", retry
		}
		return sw + " failed to install on " + detail + "; the node's log says why.", retry
	case models.KindCheckFailed:
		return sw + " installed but did not pass its check in time.", retry
	case models.KindInstallInterrupted:
		return "A stop interrupted the install of " + sw + "; it did not finish.", retry
	case models.KindResumeFailed:
		cause := le.Cause()
		switch cause.Kind {
		case models.KindTimeout:
			sentence = "A machine did not finish " + stepDoing(cause.Detail) + " in time while resuming"
		case models.KindNodeLost:
			sentence = "A machine vanished at the provider while resuming"
		case models.KindProviderRejected:
			sentence = "The provider refused to start the machines again"
		default:
			sentence = "The resume did not bring every machine back"
		}
		return sentence + "; every machine is stopped again.", stopped
	case models.KindVerifyFailed:
		keep := "The machines stay up and billing continues at " + rate + ". Read the verification report below, then keep the cluster as it is or terminate it."
		if cl.BillingHeld() { // X13: verification is not billed; keeping it starts billing (L7)
			keep = "Nothing is billed yet: read the verification report below, then keep the cluster as it is (billed at " + rate + " from then) or terminate it."
		}
		switch detail {
		case "fabric":
			return "The network between the machines is slower than the offer's interconnect allows, on every link alike; no machine was swapped.", keep
		case "timeout":
			return "Verification did not finish within its window.", keep
		}
		return detail + " failed verification and could not be swapped.", keep
	case models.KindResumeCancelled:
		why := ""
		switch models.StopReason(detail) {
		case models.StopByBalance:
			why = " because the balance ran out"
		case models.StopByBudget:
			why = " because the environment's budget was reached"
		case models.StopByIdle:
			why = " because every GPU sat idle past the cluster's idle rule"
		case models.StopByCustomer:
			why = " because a stop was asked for"
		}
		return "The resume was cancelled" + why + "; every machine is stopped again.", stopped
	}
	// A code that names no declared kind (stored before kinds were typed).
	if cl.Status.Failed() {
		return "The cluster did not come up whole; " + releasedNothingBilled + ".", failedAdvice(0)
	}
	return "The cluster is degraded.", "The machines stay up and billing continues at " + rate + ". Terminate the cluster to stop billing."
}

// phase is one provisioning step as the progress line says it.
type phase struct{ name, done string }

var phases = map[string]phase{
	models.StepRunning: {"Booting", "booted"},
	models.StepAgent:   {"Starting agents", "checked in"},
	models.StepMesh:    {"Joining the private network", "joined"},
}

// progressView is a starting cluster's progress line: the phase, how many
// machines finished it, how long it usually takes, the time elapsed, and
// as secondary text when the cluster gives up (L4, L11). nil once it is
// not starting.
func progressView(cl models.Cluster, nodes []models.ClusterNode, run *models.SoftwareRun, now time.Time) *views.ProgressView {
	if cl.Ending() {
		return nil
	}
	machines := fmt.Sprintf("%d machines", cl.Nodes)
	switch cl.Status {
	case models.StatusProvisioning:
		if cl.PlacedAt == nil {
			return &views.ProgressView{Phase: "Reserving", Count: "0 of " + machines + " reserved",
				Usual: "usually under a minute", Elapsed: elapsed(now.Sub(cl.CreatedAt)),
				GivesUp: "gives up at " + cl.CreatedAt.Add(cl.Cap()).UTC().Format("15:04")}
		}
		step, done := currentStep(nodes)
		ph := phases[step]
		v := &views.ProgressView{Phase: ph.name, Count: fmt.Sprintf("%d of %d machines %s", done, cl.Nodes, ph.done),
			Elapsed: elapsed(now.Sub(cl.CreatedAt)), GivesUp: "gives up at " + cl.StepDeadline(step).UTC().Format("15:04")}
		switch step {
		case models.StepRunning:
			v.Usual = "usually about " + minutes(cl.BootTime()) + " for " + kindNoun(cl.MachineKind)
		default:
			v.Usual = "usually under a minute"
		}
		return v
	case models.StatusInstalling:
		v := &views.ProgressView{Phase: "Installing " + softwareLabel(cl.Software), Count: "on " + machines}
		start := now
		if cl.ReadyAt != nil {
			start = *cl.ReadyAt
		}
		if run != nil {
			start = run.StartedAt
			v.GivesUp = "gives up at " + run.Deadline.UTC().Format("15:04")
		} else {
			v.GivesUp = "gives up at " + start.Add(models.InstallWindow(cl.Software)).UTC().Format("15:04")
		}
		v.Elapsed = elapsed(now.Sub(start))
		return v
	case models.StatusVerifying: // X13: the report below says how far it is
		start := now
		if cl.ReadyAt != nil {
			start = *cl.ReadyAt
		}
		return &views.ProgressView{Phase: "Verifying every machine and the fabric", Count: "on " + machines,
			Usual: "usually 3–6 minutes", Elapsed: elapsed(now.Sub(start))}
	}
	return nil
}

// currentStep is the earliest step a node still waits for and how many
// machines finished it.
func currentStep(nodes []models.ClusterNode) (string, int) {
	for _, step := range models.ProvisionSteps {
		done := 0
		for _, n := range nodes {
			if stepStamp(n, step) != nil {
				done++
			}
		}
		if done < len(nodes) {
			return step, done
		}
	}
	return models.StepMesh, len(nodes)
}

func stepStamp(n models.ClusterNode, step string) *time.Time {
	switch step {
	case models.StepRunning:
		return n.RunningAt
	case models.StepAgent:
		return n.AgentAt
	case models.StepMesh:
		return n.MeshAt
	}
	return n.SoftwareAt
}

// kindNoun is a machine kind in a sentence ("bare metal", "VMs").
func kindNoun(kind string) string {
	switch kind {
	case "vm":
		return "VMs"
	case "container":
		return "containers"
	case "bare_metal":
		return "bare metal"
	}
	return kind
}

// elapsed is m:ss, or h:mm:ss past an hour.
func elapsed(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d elapsed", h, m, s)
	}
	return fmt.Sprintf("%d:%02d elapsed", m, s)
}

// minutes is a typical duration in whole minutes ("12 min").
func minutes(d time.Duration) string {
	if d < time.Minute {
		return "a minute"
	}
	return fmt.Sprintf("%d min", int(d.Round(time.Minute).Minutes()))
}

// nodeDetail is the second line under a node's status: what it is doing
// while the cluster starts, or what the health pass saw.
func nodeDetail(cl models.Cluster, n models.ClusterNode, shown models.NodeStatus) string {
	switch shown {
	case models.NodeProvisioning:
		if n.Step == "done" {
			return "joined; waiting for the others"
		}
		if cl.PlacedAt == nil {
			return "being reserved"
		}
		return stepDoing(n.Step)
	case models.NodeFailed:
		return "failed while " + stepDoing(n.Step)
	case models.NodeReleased:
		return "released with the cluster"
	case models.NodeDegraded:
		return "software not in place"
	case models.NodeJoining:
		if n.JoinPlacedAt == nil {
			return "being reserved"
		}
		if n.MeshAt != nil {
			return "installing the software with the others"
		}
		return stepDoing(n.Step)
	}
	return ""
}

// ranFor is how long an ended cluster existed, launch to end: "2 min",
// "1 h 30 min", "3 d 4 h".
func ranFor(d time.Duration) string {
	d = max(d, 0).Round(time.Minute)
	days, h, m := int(d.Hours())/24, int(d.Hours())%24, int(d.Minutes())%60
	switch {
	case days > 0:
		return fmt.Sprintf("%d d %d h", days, h)
	case h > 0:
		return fmt.Sprintf("%d h %d min", h, m)
	case m == 0:
		return "under a minute"
	}
	return fmt.Sprintf("%d min", m)
}

// failedAdvice is what to do about a failed cluster, given how many offers
// of its shape can start now (L4).
func failedAdvice(alternatives int) string {
	switch alternatives {
	case 0:
		return "Nothing is retried without you. No offer of this shape can start right now: request a quote, or try another shape on the offers page."
	case 1:
		return "Nothing is retried without you. One offer of the same shape can start now: see the Overview."
	}
	return fmt.Sprintf("Nothing is retried without you. %d offers of the same shape can start now: see the Overview.", alternatives)
}
