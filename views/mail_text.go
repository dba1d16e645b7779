package views

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models/domain"
)

// mailText is a notification's subject and plain-text part (E1); false for
// a kind without a view. The HTML part lays this text out (MailPage), or,
// for the ready mail, is its own view (ClusterReadyMail).
func mailText(n domain.Notification) (subject, text string, ok bool) {
	switch m := n.(type) {
	case domain.ClusterMail:
		return clusterMailText(m)
	case domain.GPUStallMail:
		return fmt.Sprintf("Cluster %s: %s", m.Name, strings.TrimSuffix(m.Message, ".")),
			fmt.Sprintf("The GPUs of your cluster %s (%s) look stalled:\n\n    %s\n\n"+
				"A job whose ranks wait on one another this way usually hangs in a collective (NCCL) on the machines named, "+
				"while billing continues at %s per hour. Look at their logs and GPU charts: %s\n\n"+
				"You get this once per stall. Change how long a stall must last, or switch these alerts off, on the cluster page.\n",
				m.Name, m.Shape, m.Message, domain.USD(m.USDPerHour), m.Link), true
	case domain.GPUIdleMail:
		return idleMailText(m)
	case domain.BudgetAlertMail:
		return budgetAlertText(m)
	case domain.BudgetStoppedMail:
		return budgetStoppedText(m)
	case domain.BalanceMail:
		return balanceMailText(m)
	case domain.ChargeFailedMail:
		s, t := ChargeFailedText(m.Amount, m.FailureCode, m.AuthenticationRequired)
		return s, t, true
	case domain.PriceAboveMail:
		return fmt.Sprintf("%s bills above the launch cost for cluster %s", m.Provider, m.ClusterID),
			fmt.Sprintf("%s bills $%s per machine-hour for cluster %s (%s, %d machines of %s), above the $%s it cost when launched.\n\n"+
				"The customer still pays the locked $%s per machine-hour. The cluster is listed on /admin/prices.\n",
				m.Provider, domain.DecimalUSD(m.Billed), m.ClusterID, m.OrgID, m.Nodes, m.OfferID,
				domain.DecimalUSD(m.Upstream), domain.DecimalUSD(m.Locked)), true
	case domain.WebhookPausedMail:
		return clipWords("Webhook endpoint paused: "+m.URL, 25+120),
			fmt.Sprintf("Clusterdeck paused the webhook endpoint %s (%s). %s\n\n"+
				"Its events are kept: fix the receiver, then enable the endpoint again and they are sent in order.\n\n%s\n",
				m.URL, m.EndpointID, m.Reason, m.Link), true
	case domain.PasswordResetMail:
		return "Reset your Clusterdeck password",
			fmt.Sprintf("Hello %s,\n\nSomeone (hopefully you) asked to reset the password of your Clusterdeck account.\n\n"+
				"Choose a new password here (the link works once, until %s):\n%s\n\n"+
				"If you did not ask, ignore this mail: your password stays as it is.\n",
				m.Name, m.ExpiresAt.UTC().Format("2006-01-02 15:04")+" UTC", m.Link), true
	case domain.PasswordChangedMail:
		return "Your Clusterdeck password was changed", passwordChangedText(m), true
	case domain.InviteMail:
		return m.Inviter + " invited you to " + m.OrgName + " on Clusterdeck",
			fmt.Sprintf("Hello,\n\n%s invited you to join %s on Clusterdeck as %s.\n\n"+
				"Open this link to accept (it works until %s):\n%s\n\nIf you did not expect this, ignore this mail.\n",
				m.Inviter, m.OrgName, m.Role, m.ExpiresAt.UTC().Format("2006-01-02 15:04")+" UTC", m.Link), true
	case domain.QuoteReceivedMail:
		r := m.Request
		return "We received your quote request for " + r.Shape(),
			"Hello " + m.ContactName + ",\n\nThank you: we received your request for reserved capacity.\n\n" +
				quoteSummary(r) + "\nOur sales team replies within one business day, to " + m.ContactEmail +
				". Follow its status here:\n" + m.Link + "\n", true
	case domain.QuoteSalesMail:
		r := m.Request
		return "Quote request " + r.ID + ": " + r.Shape() + " for " + oneLine(m.OrgName),
			"A new quote request from " + m.OrgName + " (" + m.OrgID + "), sent by " + m.Requester + ".\n\n" +
				quoteSummary(r) + "\nContact: " + m.ContactName + " <" + m.ContactEmail + ">" + prefixed(", ", m.ContactPhone) +
				"\n\nNotes:\n" + orNone(m.Notes) + "\n\nAnswer it in the inbox:\n" + m.Link + "\n", true
	case domain.QuoteStatusMail:
		r := m.Request
		return "Your quote request for " + r.Shape() + " is now " + string(m.Status),
			"Hello " + m.ContactName + ",\n\n" + domain.CapacityStatusText(m.Status) + "\n\n" + quoteSummary(r) +
				"\nFollow it here:\n" + m.Link + "\n", true
	case domain.ReservationMail:
		return reservationSubject(m), m.Message + "\n\n" + m.Link + "\n", true
	case domain.PrivateOfferMail:
		p := m
		return "Your private offer for " + p.Shape() + " is ready",
			"Hello " + m.ContactName + ",\n\nAs agreed for your quote request " + m.RequestID + ", this offer is reserved for " +
				"your organisation:\n\n" + offerSummary(p) + "\n" + offerHow(p, m.Link) + "\n\nIt is also marked as yours on the offers page, and the API takes it as privateOfferId " +
				p.OfferID + ".\n", true
	}
	return "", "", false
}

// clusterMailText is a cluster outcome's subject and text (E1, R2, R5, B6).
func clusterMailText(m domain.ClusterMail) (subject, body string, ok bool) {
	shape := m.Shape + " in " + m.Place
	rate := domain.USD(m.USDPerHour)
	switch m.Topic {
	case domain.ClusterMailResumed:
		return fmt.Sprintf("Cluster %s is running again", m.Name),
			fmt.Sprintf("Every machine of your cluster %s (%s) started again and joined; the cluster is ready.\n\n"+
				"Billing restarted now for all machines at %s per hour.\n\nConnect: %s\n", m.Name, shape, rate, m.Link), true
	case domain.ClusterMailResumedDegraded:
		return fmt.Sprintf("Cluster %s is running again, degraded", m.Name),
			fmt.Sprintf("Every machine of your cluster %s (%s) started again and joined, but its software had not passed "+
				"its check before the stop (%s).\n\nBilling restarted now at %s per hour. Retry the install or terminate: %s\n",
				m.Name, shape, m.LastError, rate, m.Link), true
	case domain.ClusterMailHealthy:
		return fmt.Sprintf("Cluster %s is healthy again", m.Name),
			fmt.Sprintf("Every machine of your cluster %s (%s) is running again; the cluster is ready.\n\n"+
				"Billing continued throughout at %s per hour.\n\nDetails: %s\n", m.Name, shape, rate, m.Link), true
	case domain.ClusterMailReady:
		connect := ""
		if m.SSH != "" {
			connect = "Log in to node-0:\n\n    " + m.SSH + "\n\n"
		}
		return fmt.Sprintf("Cluster %s is ready", m.Name), withVerification(fmt.Sprintf(
			"Your cluster %s (%s) is ready: every machine is up and joined.\n\n"+
				"%s"+
				"Billing started %s for all machines at %s per hour.\n"+
				"Ready means infrastructure readiness only; run your own application check before sending traffic.\n\n"+
				"Every node's SSH command, the hostfile and ready-made launch commands: %s\n",
			m.Name, shape, connect, readySince(m.ReadyAt), rate, m.Link), m.Verification), true
	case domain.ClusterMailFailed:
		return fmt.Sprintf("Cluster %s failed to start", m.Name),
			fmt.Sprintf("Your cluster %s (%s) did not come up whole: %s.\n\n"+
				"Every machine was released and nothing was billed. Nothing is retried without you.\n"+
				"See what happened and what can start now: %s\n", m.Name, shape, m.LastError, m.Link), true
	case domain.ClusterMailRecoveryExhausted:
		return fmt.Sprintf("Recovery of cluster %s gave up", m.Name),
			fmt.Sprintf("Every recovery attempt for your cluster %s (%s) is spent and a machine is still down.\n\n"+
				"The cluster stays degraded and billing continues at %s per hour. Terminate it, or try recover now: %s\n",
				m.Name, shape, rate, m.Link), true
	case domain.ClusterMailNodeDown:
		recovery := "Automatic recovery is off for this cluster: nothing else happens until you act."
		if m.AutoRecover {
			recovery = fmt.Sprintf("Automatic recovery restarts the machines that are down, one by one, up to %d times, %d minutes apart.",
				m.RecoverAttempts, m.RecoverCooldown)
		}
		return fmt.Sprintf("Cluster %s is degraded: a machine is down", m.Name),
			fmt.Sprintf("A machine of your cluster %s (%s) left running: %s.\n\n"+
				"The other machines stay up and billing continues at %s per hour. %s\n"+
				"See the machine's status, recover now or terminate: %s\n",
				m.Name, shape, m.Detail, rate, recovery, m.Link), true
	case domain.ClusterMailVerifyFailed:
		return fmt.Sprintf("Cluster %s failed verification", m.Name), withVerification(fmt.Sprintf(
			"Your cluster %s (%s) did not pass verification before hand-over: %s.\n\n"+
				"The machines stay up and billing continues at %s per hour. Read the report, then keep the cluster as it is or terminate it: %s\n",
			m.Name, shape, m.LastError, rate, m.Link), m.Verification), true
	case domain.ClusterMailDegraded:
		return fmt.Sprintf("Cluster %s is degraded", m.Name),
			fmt.Sprintf("Your cluster %s (%s) is degraded: %s.\n\n"+
				"The machines stay up and billing continues. Retry the install or terminate: %s\n", m.Name, shape, m.LastError, m.Link), true
	}
	return "", "", false
}

// withVerification puts the hand-over report's summary after the first
// paragraph.
func withVerification(body, summary string) string {
	if summary == "" {
		return body
	}
	return strings.Replace(body, "\n\n", "\n\n"+verificationLine(summary)+"\n\n", 1)
}

func verificationLine(summary string) string { return "Verification: " + summary }

func readySince(at *time.Time) string {
	if at == nil {
		return "now"
	}
	return "at " + at.Format("2006-01-02 15:04 MST")
}

// idleMailText is an idle episode's mail (X15, L7).
func idleMailText(m domain.GPUIdleMail) (subject, body string, ok bool) {
	idle := spellMinutes(m.IdleMinutes)
	what := "Nothing else happens: this cluster's idle rule only mails."
	subject = fmt.Sprintf("Cluster %s has been idle for %s", m.Name, idle)
	if m.Action != domain.IdleMail {
		at := m.ActAt.Format("15:04 MST, 2 Jan")
		verb := "stopped (compute billing ends; resume starts every machine again)"
		subject = fmt.Sprintf("Cluster %s is idle and will be stopped at %s", m.Name, at)
		if m.Action == domain.IdleTerminate {
			verb = "terminated (every machine released; it cannot be started again)"
			subject = fmt.Sprintf("Cluster %s is idle and will be terminated at %s", m.Name, at)
		}
		what = fmt.Sprintf("Unless a GPU gets to work before %s, the cluster will be %s, as its idle rule asks.", at, verb)
	}
	body = fmt.Sprintf("Every GPU of your cluster %s (%s) has been below %d %% utilization since %s (%s), "+
		"while billing continues at %s per hour.\n\n%s\n\nChange or switch off the idle rule on the cluster page: %s\n",
		m.Name, m.Shape, m.BelowPct, m.Since.Format("15:04 MST, 2 Jan"), idle, domain.USD(m.USDPerHour), what, m.Link)
	return subject, body, true
}

// spellMinutes is "1 minute", "90 minutes", "3 h", "2 h 5 min".
func spellMinutes(m int) string {
	switch {
	case m == 1:
		return "1 minute"
	case m < 120:
		return fmt.Sprintf("%d minutes", m)
	case m%60 == 0:
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}

// budgetAlertText is an alert's mail: the spend against the budget, the
// forecast at the current burn (X6) and, at 100 %, which clusters are
// stopped and when.
func budgetAlertText(a domain.BudgetAlertMail) (subject, text string, ok bool) {
	var body strings.Builder
	if a.Percent >= 100 {
		subject = fmt.Sprintf("Budget of environment %s reached: %s of %s", a.EnvName, domain.USD(a.Spend), domain.USD(a.Budget))
		fmt.Fprintf(&body, "Your environment %s has spent %s this month (%s), reaching its budget of %s.\n\n",
			a.EnvName, domain.USD(a.Spend), a.Month, domain.USD(a.Budget))
		when := "now"
		if a.StopAt != nil {
			when = "at " + a.StopAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		if len(a.Running) == 0 {
			body.WriteString("Nothing runs in it now.\n")
		} else {
			fmt.Fprintf(&body, "Its running clusters (%s) are stopped %s: compute billing ends, volumes keep billing.\n",
				strings.Join(a.Running, ", "), when)
		}
		body.WriteString("Raise the budget to keep them running, or to resume them afterwards.\n")
	} else {
		subject = fmt.Sprintf("Budget of environment %s: %d%% used (%s of %s)", a.EnvName, a.Percent, domain.USD(a.Spend), domain.USD(a.Budget))
		fmt.Fprintf(&body, "Your environment %s has spent %s of its %s budget this month (%s): %d%% or more.\n\n",
			a.EnvName, domain.USD(a.Spend), domain.USD(a.Budget), a.Month, a.Percent)
		switch {
		case a.Burn <= 0:
			body.WriteString("Nothing runs in it now, so its spend stays where it is.\n")
		case a.ForecastAt == nil:
			fmt.Fprintf(&body, "At the current burn of %s/h it will not reach the budget this month.\n", domain.USD(a.Burn))
		default:
			fmt.Fprintf(&body, "At the current burn of %s/h it reaches the budget at %s.\n", domain.USD(a.Burn),
				a.ForecastAt.UTC().Format("2006-01-02 15:04 UTC"))
		}
		body.WriteString("When the budget is reached, the environment's running clusters are stopped (compute billing ends); raise the budget to avoid it.\n")
	}
	fmt.Fprintf(&body, "\nBudgets: %s\n", a.Link)
	return subject, body.String(), true
}

// budgetStoppedText is the mail sent when a reached budget stops clusters (B5).
func budgetStoppedText(m domain.BudgetStoppedMail) (subject, text string, ok bool) {
	var body strings.Builder
	fmt.Fprintf(&body, "Your environment %s has spent %s this month (%s), reaching its budget of %s.\n\n",
		m.EnvName, domain.USD(m.Spend), m.Month, domain.USD(m.Budget))
	fmt.Fprintf(&body, "These clusters were stopped at %s: %s. Their machines are stopped at the provider and compute billing ends; "+
		"nothing is deleted, and volumes are kept and keep billing.\n\n", m.At.UTC().Format("2006-01-02 15:04 UTC"), strings.Join(m.Stopped, ", "))
	body.WriteString("Raise the budget, then resume each cluster from its page.\n")
	fmt.Fprintf(&body, "\nBudgets: %s\n", m.Link)
	return fmt.Sprintf("Clusters stopped in environment %s by its monthly budget", m.EnvName), body.String(), true
}

// balanceMailText is the balance enforcement's mails (B6).
func balanceMailText(m domain.BalanceMail) (subject, text string, ok bool) {
	switch m.Topic {
	case domain.BalanceMailLow:
		when := " If nothing changes, they are stopped at " + m.StopAt.UTC().Format("2006-01-02 15:04 UTC") + "."
		if m.Balance <= 0 {
			return "Your Clusterdeck balance has run out",
				fmt.Sprintf("Your balance is %s while your clusters and volumes burn %s per hour.\n\n"+
					"Add funds within %s or every running cluster is stopped (compute billing ends, nothing is deleted); "+
					"unpaid %s after the stop, the clusters are terminated.%s%s\n\nAdd funds: %s\n",
					domain.USD(m.Balance), domain.USD(m.Burn), spell(m.Grace), spell(m.TerminateGrace), when, volumesKept(m.Volumes), m.Link), true
		}
		return "Your Clusterdeck balance is running low",
			fmt.Sprintf("Your balance of %s will not cover the next hour of your running clusters and volumes (%s per hour).\n\n"+
				"When it runs out, every running cluster is stopped after %s unless you add funds; "+
				"unpaid %s after the stop, the clusters are terminated.%s%s\n\nAdd funds: %s\n",
				domain.USD(m.Balance), domain.USD(m.Burn), spell(m.Grace), spell(m.TerminateGrace), when, volumesKept(m.Volumes), m.Link), true
	case domain.BalanceMailStopped:
		return "Your clusters are being stopped: the balance ran out",
			fmt.Sprintf("Your balance (%s) ran out and was not topped up within %s, so these clusters are being stopped: %s.\n\n"+
				"Their machines are stopped at the provider and compute billing ends; nothing is deleted. Add funds, then "+
				"resume each cluster from its page. Unpaid %s from now, they are terminated.%s\n\nAdd funds: %s\n",
				domain.USD(m.Balance), spell(m.Grace), strings.Join(m.Clusters, ", "), spell(m.TerminateGrace), volumesKept(m.Volumes), m.Link), true
	case domain.BalanceMailTerminated:
		return "Your stopped clusters were terminated: the balance stayed unpaid",
			fmt.Sprintf("Your balance (%s) stayed unpaid for %s after your clusters were stopped, so these clusters are "+
				"terminated: %s.\n\nTheir machines are released and billing for them has ended.%s\n\nBilling: %s\n",
				domain.USD(m.Balance), spell(m.TerminateGrace), strings.Join(m.Clusters, ", "), volumesKept(m.Volumes), m.Link), true
	}
	return "", "", false
}

// volumesKept is what the balance mails say of volumes: they are customer
// data, so an unpaid balance never deletes them; they keep billing until
// their owner deletes them.
func volumesKept(vols domain.Money) string {
	if vols <= 0 {
		return ""
	}
	return fmt.Sprintf("\n\nYour volumes are kept: Clusterdeck never deletes a volume for an unpaid balance. "+
		"They keep billing (%s per hour) until you delete them, and the balance goes further below zero meanwhile; "+
		"delete the ones you no longer need on the Volumes page.", domain.USD(vols))
}

// spell writes a grace for people: "1 hour", "72 hours", "90 minutes".
func spell(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "1 hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}

// ChargeFailedText is a failed auto-recharge's headline and explanation,
// for the mail and the billing page's banner alike (X8).
func ChargeFailedText(amount domain.Money, failureCode string, authenticationRequired bool) (subject, text string) {
	if authenticationRequired {
		subject = "Auto-recharge of " + domain.USD(amount) + " needs your bank's confirmation"
		text = "Your bank asked to confirm the auto-recharge of " + domain.USD(amount) + " with you, so nothing was charged. "
	} else {
		subject = "Auto-recharge of " + domain.USD(amount) + " was declined"
		text = "Your card declined the auto-recharge of " + domain.USD(amount) + " (" + failureCode + "). "
	}
	text += "Auto-recharge is paused and will not try again until you add funds with a card or re-enable it on the billing page."
	return subject, text
}

// passwordChangedText is the notice after a reset: what ended, and the API
// keys that still work, since a reset alone does not end them.
func passwordChangedText(m domain.PasswordChangedMail) string {
	var b strings.Builder
	ip := m.IP
	if ip == "" {
		ip = "an unknown address"
	}
	fmt.Fprintf(&b, "Hello %s,\n\nThe password of your Clusterdeck account was just changed through a reset link (from %s), and every session was logged out.\n", m.Name, ip)
	switch {
	case m.Revoked:
		b.WriteString("Every API key you created was revoked with it: programs using them (the CLI, scripts, MCP clients) need new keys.\n")
	case len(m.Keys) == 0:
		b.WriteString("You have no API keys.\n")
	default:
		b.WriteString("\nThese API keys you created still work (a reset does not end them):\n")
		for _, k := range m.Keys {
			env := k.EnvName
			if env == "" {
				env = "?"
			}
			fmt.Fprintf(&b, "- %s (%s…), organisation %s, environment %s\n", k.Name, k.Prefix, k.OrgName, env)
		}
		b.WriteString("Revoke any you do not recognise under Settings → API keys.\n")
	}
	b.WriteString("\nIf this was not you, reset it again at once, revoke your API keys, and tell your organisation's owner.\n")
	return b.String()
}

// quoteSummary is a quote request's table in its mails (X9).
func quoteSummary(r domain.MailQuoteRequest) string {
	budget := "not given"
	if r.BudgetPerHour > 0 {
		budget = domain.USD(r.BudgetPerHour) + "/h for the whole cluster"
	}
	loc := r.Location
	if loc == "" {
		loc = "anywhere"
	}
	return "  Request:  " + r.ID + "\n" +
		"  Shape:    " + r.Shape() + "\n" +
		"  Fabric:   " + domain.FabricText(r.Fabric) + "\n" +
		"  Location: " + oneLine(loc) + "\n" +
		"  Start:    " + r.StartDay() + ", for " + r.DurationText() + "\n" +
		"  Budget:   " + budget + "\n"
}

// offerSummary is a private offer's table in its mail (X9).
func offerSummary(p domain.PrivateOfferMail) string {
	return "  Offer:    " + p.OfferID + "\n" +
		"  Shape:    " + p.Shape() + "\n" +
		"  Where:    " + oneLine(p.LocationName) + " (" + p.Location + "), " + domain.FabricText(p.Interconnect) + "\n" +
		"  Price:    " + domain.USD(p.MachineHour) + " per machine-hour, " + domain.USD(p.ClusterHour()) + "/h for the cluster\n" +
		"  Valid:    through " + p.ValidThrough() + " (UTC)\n" + offerDates(p)
}

// offerHow says how to take the offer: launch it now, or book a dated one
// as a reservation (X9, X18).
func offerHow(p domain.PrivateOfferMail, link string) string {
	if p.StartAt == nil {
		return "Launch your private offer, until the end of " + p.ValidThrough() + " UTC:\n" + link
	}
	return "Book it, until the end of " + p.ValidThrough() + " UTC, as a reservation from " + p.StartAt.UTC().Format(time.RFC3339) +
		" for " + strconv.Itoa(p.TermHours/24) + " days (POST /v1/reservations with privateOfferId " + p.OfferID +
		", or the reserve_capacity tool); its machines are launched ahead, verified and handed over at the start."
}

// offerDates is a dated offer's start and term line (X18), "" otherwise.
func offerDates(p domain.PrivateOfferMail) string {
	if p.StartAt == nil {
		return ""
	}
	return "  Reserved: from " + p.StartAt.UTC().Format(time.RFC3339) + " for " + strconv.Itoa(p.TermHours/24) + " days (" +
		domain.USD(p.MachineHour*domain.Money(p.Nodes)*domain.Money(p.TermHours)) + " for the term)\n"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// reservationSubject is a reservation mail's subject by its step (X18).
func reservationSubject(m domain.ReservationMail) string {
	id := "Reservation " + m.ReservationID
	switch {
	case m.What == "booked":
		return id + " booked: " + m.Shape
	case m.What == "cancelled":
		return id + " cancelled"
	case m.What == "handed-over":
		return id + " is ready: " + m.Shape
	case m.What == "ended":
		return id + " ended"
	case strings.HasPrefix(m.What, "ending"):
		return id + " ends " + m.EndAt.UTC().Format(time.RFC3339)
	case m.What == "failed":
		return id + " could not be delivered"
	}
	return id + ": " + m.Shape
}
