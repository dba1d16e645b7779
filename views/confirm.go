package views

import "github.com/a-h/templ"

// Consequence is what an action that asks first does (L7, U*): it decides
// how the layout's confirm dialog looks and what it says above the
// question, so every question reads the same way for the same kind of act.
type Consequence string

const (
	// Destroys: data or access gone for good (terminate, delete a volume,
	// replace a machine, delete or revoke a key): a red button.
	Destroys Consequence = "destroy"
	// Bills: starts billing (resume, keep a cluster as it is, add a worker):
	// the primary button, and the detail names the price.
	Bills Consequence = "bill"
	// Stresses: loads the customer's GPUs (run verification again): an
	// amber warning button.
	Stresses Consequence = "stress"
	// Changes: anything else worth a second look (add funds, rotate a
	// secret, adjust a balance): the primary button, no warning line.
	Changes Consequence = "change"
)

// ConsequenceStyle is how the dialog shows one consequence: its button's
// class and the line above the question ("" = none).
type ConsequenceStyle struct {
	Kind        Consequence
	Button      string
	Line        string
	LineClasses string
}

// ConsequenceStyles is the one rule, consequence → style and wording; the
// dialog carries it and static/js/app.js applies the form's.
var ConsequenceStyles = []ConsequenceStyle{
	{Destroys, "btn-danger", "Cannot be undone", "text-red-700 dark:text-red-400"},
	{Bills, "btn-primary", "Starts billing", "text-indigo-700 dark:text-indigo-300"},
	{Stresses, "btn-warning", "Puts every GPU under full load", "text-amber-700 dark:text-amber-300"},
	{Changes, "btn-primary", "", ""},
}

// Confirm is the attributes of a form that asks before it is sent
// (static/js/app.js): question names the object ("Terminate llama?"),
// detail says what follows (for Bills, the price), label is the dialog's
// button. In a template: <form method="post" action=… { Confirm(Bills,
// "Resume "+name+"?", "Billing restarts at "+price+" …", "Resume")... }>.
func Confirm(c Consequence, question, detail, label string) templ.Attributes {
	return templ.Attributes{"data-confirm": question, "data-confirm-detail": detail, "data-confirm-label": label,
		"data-consequence": string(c)}
}
