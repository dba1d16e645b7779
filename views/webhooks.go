package views

// WebhooksPage is /settings/webhooks: the environment's endpoints (X8), the
// form to add one, a secret shown once, and one endpoint's delivery log.
type WebhooksPage struct {
	Meta      Meta
	Nav       SettingsNav
	Env       string
	Types     []string // every public event type
	Endpoints []WebhookRow
	Form      WebhookForm
	Problems  map[string]string
	Secret    *WebhookSecret
}

// WebhookForm is the new-endpoint form as typed.
type WebhookForm struct {
	URL, Description string
	Types            []string
	Enabled          bool
}

// Has reports whether the form has type t ticked.
func (f WebhookForm) Has(t string) bool {
	for _, x := range f.Types {
		if x == t {
			return true
		}
	}
	return false
}

// WebhookSecret is a signing secret shown once, after create or rotate.
type WebhookSecret struct {
	EndpointID, URL, Secret string
	Rotated                 bool
	OldUntil                string
}

// WebhookRow is one endpoint.
type WebhookRow struct {
	ID, URL, Description string
	Types                []string
	Enabled              bool
	PausedReason         string
	FailingSince         string
	OldSecretUntil       string
	Pending              int64
	Created              string
	ShowLog              bool
	Log                  []WebhookAttemptRow
}

// WebhookAttemptRow is one row of the delivery log.
type WebhookAttemptRow struct {
	DeliveryID, EventID, Type string
	Attempt                   int
	At                        string
	Status                    int
	OK                        bool
	Duration                  string
	Answer, Error             string
}
