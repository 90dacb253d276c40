//! What ork says to do when the identity it runs as lacks permissions (`ork run`'s start,
//! `ork validate --cluster`).

/// What to do when the identity ork runs as lacks permissions: apply the RBAC `ork generate
/// rbac` derives for `namespace` (ork's), and run ork as the ServiceAccount it binds, which is
/// not the identity of the user who applied it (applying it and starting ork again as oneself
/// fails the same way).
pub fn run_as_hint(katalog: &std::path::Path, namespace: &str) -> String {
    let k = katalog.display();
    format!(
        "grant them with: ork generate rbac -k {k} --namespace {namespace} (with the same --controllers and --metacontroller) | kubectl apply -f -\n\
         that RBAC binds ServiceAccount {namespace}/ork (or the --name given), not the identity ork runs as now: run ork as that ServiceAccount\n  \
         ork generate kubeconfig --service-account {namespace}/ork -o ork-sa.kubeconfig\n  \
         ORK_NAMESPACE={namespace} ork run -k {k} --kubeconfig ork-sa.kubeconfig\n\
         (in a pod: serviceAccountName: ork in namespace {namespace}), or use a kubeconfig whose identity has them"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_names_the_service_account_the_rbac_binds_and_how_to_run_as_it() {
        let hint = run_as_hint(std::path::Path::new("k.yaml"), "team");
        assert!(
            hint.contains("ork generate rbac -k k.yaml --namespace team"),
            "{hint}"
        );
        assert!(hint.contains("binds ServiceAccount team/ork"), "{hint}");
        assert!(
            hint.contains(
                "ork generate kubeconfig --service-account team/ork -o ork-sa.kubeconfig"
            ),
            "{hint}"
        );
        assert!(
            hint.contains("ORK_NAMESPACE=team ork run -k k.yaml --kubeconfig ork-sa.kubeconfig"),
            "{hint}"
        );
    }
}
