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

// WebhookVerifyExample is one language's signature check shown on the
// webhooks page.
type WebhookVerifyExample struct{ Lang, Title, Code string }

// WebhookVerifyExamples check Clusterdeck-Signature as models.
// WebhookSignature makes it (X8). web's tests run the JavaScript in a
// browser and compile the Go (webhookVerifyExample); the Python is
// docs/api.md's.
var WebhookVerifyExamples = []WebhookVerifyExample{
	{"js", "JavaScript (Node 20+, Deno, Bun, Workers)", `// body: the raw request body as a string, before any JSON parsing.
async function verify(body, header, secret, toleranceSeconds = 300) {
  const parts = header.split(",").map((p) => p.split("="));
  const t = (parts.find(([k]) => k === "t") || [])[1];
  if (!t || Math.abs(Date.now() / 1000 - Number(t)) > toleranceSeconds) return false;
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", enc.encode(secret),
    { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const data = enc.encode(t + "." + body);
  for (const [k, v] of parts) {
    if (k !== "v1" || !/^[0-9a-f]{64}$/.test(v)) continue;
    const sig = new Uint8Array(v.match(/../g).map((h) => parseInt(h, 16)));
    if (await crypto.subtle.verify("HMAC", key, sig, data)) return true;
  }
  return false;
}
// await verify(rawBody, req.headers["clusterdeck-signature"], "whsec_…")`},
	{"python", "Python", `import hmac, hashlib, time
def verify(body: bytes, header: str, secret: str, tolerance=300) -> bool:
    parts = [p.split("=", 1) for p in header.split(",")]
    t = next(v for k, v in parts if k == "t")
    if abs(time.time() - int(t)) > tolerance:
        return False
    mac = hmac.new(secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return any(k == "v1" and hmac.compare_digest(v, mac) for k, v in parts)
# verify(request.get_data(), request.headers["Clusterdeck-Signature"], "whsec_…")`},
	{"go", "Go", `// import: crypto/hmac, crypto/sha256, encoding/hex, slices, strconv, strings, time
` + WebhookVerifyGo + `
// verify(body, r.Header.Get("Clusterdeck-Signature"), "whsec_…", time.Now())`},
}

// WebhookVerifyGo is the Go example's function, word for word
// webhookVerifyExample in web's tests, which compile and run it.
const WebhookVerifyGo = `func verify(body []byte, header, secret string, now time.Time) bool {
	var t string
	var sigs []string
	for _, p := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(p, "=")
		if k == "t" {
			t = v
		} else if k == "v1" {
			sigs = append(sigs, v)
		}
	}
	ts, err := strconv.ParseInt(t, 10, 64)
	if err != nil || now.Sub(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(t + "."))
	m.Write(body)
	want := hex.EncodeToString(m.Sum(nil))
	return slices.ContainsFunc(sigs, func(s string) bool { return hmac.Equal([]byte(s), []byte(want)) })
}`
