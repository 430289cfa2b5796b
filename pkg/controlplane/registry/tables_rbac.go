package registry

import (
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's printers: roles NAME, CREATED AT; bindings NAME, ROLE, AGE
// and, wide, USERS, GROUPS, SERVICEACCOUNTS.
var (
	roleColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	}
	bindingColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Role", "string", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		ageColumn,
		wideCol("Users", "string", "Users in the roleBinding"),
		wideCol("Groups", "string", "Groups in the roleBinding"),
		wideCol("ServiceAccounts", "string", "ServiceAccounts in the roleBinding"),
	}
)

func roleRow(name string, m metav1.ObjectMeta) []interface{} {
	return []interface{}{name, m.CreationTimestamp.UTC().Format(time.RFC3339)}
}

func (b *builder) bindingRow(m metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject) []interface{} {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		}
	}
	return []interface{}{m.Name, ref.Kind + "/" + ref.Name, b.age(m),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}
