package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The field managers of the apply check.
const (
	managerA = "cg-manager-a"
	managerB = "cg-manager-b"
)

// applied returns the configuration a field manager applies: a Flunder named `name` with the
// given spec.
func (e *env) applied(name string, spec map[string]any) *unstructured.Unstructured {
	u := e.flunder("apply", name, "")
	u.Object["spec"] = spec
	return u
}

func checkApply(ctx context.Context, e *env) (string, error) {
	dyn, _, err := e.clients(&recorder{})
	if err != nil {
		return "", err
	}
	api := dyn.Resource(flunders).Namespace(e.namespace)
	name := "cg-apply-" + e.run

	// An apply creates what does not exist.
	spec := map[string]any{"reference": "a"}
	if e.wardle {
		spec["toppings"] = []any{map[string]any{"name": "salt", "amount": int64(1)}}
	}
	first, err := api.Apply(ctx, name, e.applied(name, spec), metav1.ApplyOptions{FieldManager: managerA})
	if err != nil {
		return "", fmt.Errorf("the first apply (a create) by %s: %w", managerA, err)
	}
	if str(first, "spec", "reference") != "a" {
		return "", fmt.Errorf("the first apply stored spec.reference %q", str(first, "spec", "reference"))
	}
	if err := wantOwner(first, managerA, "f:reference", true); err != nil {
		return "", err
	}

	// Another manager setting the same field to another value conflicts.
	_, err = api.Apply(ctx, name, e.applied(name, map[string]any{"reference": "b"}),
		metav1.ApplyOptions{FieldManager: managerB})
	if err := wantApplyConflict(err); err != nil {
		return "", err
	}
	unchanged, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get after the conflict: %w", err)
	}
	if unchanged.GetResourceVersion() != first.GetResourceVersion() {
		return "", fmt.Errorf("the refused apply changed the object (resourceVersion %s, was %s)",
			unchanged.GetResourceVersion(), first.GetResourceVersion())
	}

	// Forced, the field moves to the second manager; the first keeps the rest.
	forced, err := api.Apply(ctx, name, e.applied(name, map[string]any{"reference": "b"}),
		metav1.ApplyOptions{FieldManager: managerB, Force: true})
	if err != nil {
		return "", fmt.Errorf("the forced apply by %s: %w", managerB, err)
	}
	if str(forced, "spec", "reference") != "b" {
		return "", fmt.Errorf("the forced apply stored spec.reference %q, want b", str(forced, "spec", "reference"))
	}
	type owner struct {
		manager, field string
		owns           bool
	}
	owners := []owner{{managerB, "f:reference", true}, {managerA, "f:reference", false}}
	if e.wardle {
		owners = append(owners, owner{managerA, "f:toppings", true})
	}
	for _, owner := range owners {
		if err := wantOwner(forced, owner.manager, owner.field, owner.owns); err != nil {
			return "", err
		}
	}
	if !e.wardle {
		if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return "", fmt.Errorf("delete %s: %w", name, err)
		}
		return "apply creates, a second manager's change conflicts (409, the field and its manager named), " +
			"force moves the field", nil
	}

	// Toppings are a list map keyed by name: a second manager's entry joins the first's.
	merged, err := api.Apply(ctx, name, e.applied(name, map[string]any{
		"reference": "b",
		"toppings":  []any{map[string]any{"name": "pepper", "amount": int64(2)}},
	}), metav1.ApplyOptions{FieldManager: managerB})
	if err != nil {
		return "", fmt.Errorf("the apply of a second topping by %s: %w", managerB, err)
	}
	toppings, _, _ := unstructured.NestedSlice(merged.Object, "spec", "toppings")
	var got []string
	for _, t := range toppings {
		if m, ok := t.(map[string]any); ok {
			got = append(got, fmt.Sprint(m["name"]))
		}
	}
	if strings.Join(got, ",") != "salt,pepper" {
		return "", fmt.Errorf("after two managers applied one topping each: toppings %v, want [salt pepper]", got)
	}

	if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return "", fmt.Errorf("delete %s: %w", name, err)
	}
	return "apply creates, a second manager's change conflicts (409, the field and its manager named), " +
		"force moves the field, list-map entries of two managers merge by key", nil
}

// wantApplyConflict checks that err is a 409 Conflict naming spec.reference and its manager.
func wantApplyConflict(err error) error {
	if err == nil {
		return fmt.Errorf("a second manager's apply of another spec.reference succeeded, want a conflict")
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusConflict || !apierrors.IsConflict(err) {
		return fmt.Errorf("a second manager's apply of another spec.reference: want 409 Conflict, got %v", err)
	}
	details := status.Status().Details
	if details != nil {
		for _, cause := range details.Causes {
			if cause.Type == metav1.CauseTypeFieldManagerConflict && cause.Field == ".spec.reference" &&
				strings.Contains(cause.Message, managerA) {
				return nil
			}
		}
	}
	return fmt.Errorf("the conflict does not name .spec.reference and %s as a FieldManagerConflict cause: %+v",
		managerA, status.Status())
}

// wantOwner checks whether `manager` owns spec's `field` (f:reference, f:toppings) in obj's
// managedFields.
func wantOwner(obj *unstructured.Unstructured, manager, field string, owns bool) error {
	var found bool
	for _, entry := range obj.GetManagedFields() {
		if entry.Manager != manager || entry.Operation != metav1.ManagedFieldsOperationApply || entry.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]any
		if err := json.Unmarshal(entry.FieldsV1.Raw, &fields); err != nil {
			return fmt.Errorf("%s's managedFields entry: %w: %s", manager, err, entry.FieldsV1.Raw)
		}
		if _, ok := fields["f:spec"][field]; ok {
			found = true
		}
	}
	if found != owns {
		return fmt.Errorf("%s owns spec's %s: %v, want %v; managedFields: %+v", manager, field, found, owns,
			obj.GetManagedFields())
	}
	return nil
}
