package profiles_test

import (
	"errors"
	"fmt"

	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
)

func ExampleRoleFor() {
	role, err := profiles.RoleFor(receipt.ProfileProduction)
	fmt.Println(role, err)
	_, err = profiles.RoleFor(receipt.ProfileCustom)
	fmt.Println(errors.Is(err, profiles.ErrCustomHasNoRole))
	// Output:
	// roles.client_production <nil>
	// true
}

func ExampleFixed() {
	fixed := profiles.Fixed() // a fresh copy: the caller may change it
	fmt.Println(len(fixed), fixed[receipt.ProfileConfigure])
	// Output: 4 roles.client_stack
}

func ExampleCompileCustom() {
	src := []byte(`# formatting and comments do not change the digest
nginx:
  pkg.installed:
    - name: nginx
`)
	c, err := profiles.CompileCustom(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(c.Canonical))
	fmt.Println(c.Digest)
	// Output:
	// {"nginx":{"__env__":"base","__sls__":"oduflow.custom","pkg":["installed",{"name":"nginx"},{"order":10000}]}}
	// 482e331ad06fc069484baecb17770362d99039d513d5cd787b73e35e632cbc20
}

func ExampleValidateCustom() {
	err := profiles.ValidateCustom([]byte("web:\n  service.running:\n    - enable: yes\n"))
	var ce *profiles.CustomError
	if errors.As(err, &ce) {
		fmt.Println(ce.Code, ce.Line, ce.Column)
	}
	fmt.Println(errors.Is(err, profiles.ErrInvalidCustom))
	// Output:
	// ambiguous_scalar 3 15
	// true
}
