# KVM lab (issue 6): libvirt schemas new enough to validate sev-snp/tdx <launchSecurity> XML.
# The guest image itself is built (and cached by content hash) by roles/kvm_guest when needed; the
# tests keep it in the machine's cache, $(TESTBED_CACHE)/kvm-images, which every checkout shares.
KVM_SCHEMAS := .cache/libvirt-schemas/schemas/domaincommon.rng
TEST_PREREQS += kvm-schemas

.PHONY: kvm-schemas kvm-clean
kvm-schemas: $(KVM_SCHEMAS) ## libvirt schemas that know sev-snp and tdx (from Debian's libvirt-common)

$(KVM_SCHEMAS): tests/kvm/fetch-libvirt-schemas.sh
	@tests/kvm/fetch-libvirt-schemas.sh .cache/libvirt-schemas >/dev/null && $(TOOK)
	@touch $@

kvm-clean: ## remove the KVM guest image caches (this checkout's and the machine's) and fetched schemas
	rm -rf .cache/kvm-images $(TESTBED_CACHE)/kvm-images .cache/libvirt-schemas .cache/kvm
