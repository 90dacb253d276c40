//! The watches of one entry: kube-runtime watchers into [`Cache`]s (one writer per watch),
//! each event then handed to the controller's index. Objects are read without their
//! `managedFields` ([`Lean`]), and every cached object carries its `apiVersion` and `kind` (the
//! items of a list come without them).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, PartialObjectMeta, TypeMeta};
use kube::runtime::utils::Backoff;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

use tokio::sync::mpsc::UnboundedSender;

use super::observe::Observer;
use super::state::Input;
use crate::cache::key_of;
use crate::cache::{CacheWriter, Holder};
use crate::discovery::ChildType;
use crate::entry::EntryContext;
use crate::labels::{FIELD_MANAGER, MANAGED, OWNER_UID};
use crate::process::Process;
use crate::wire::{Lean, undecodable};

/// Objects per page of a watch's (re-)list. Each page costs the API server about as much as
/// 500 objects (Kubernetes 1.37, 50,000 ConfigMaps listed: pages of 100 took 10.3 s, of 500
/// 3.4 s, of 2,000 2.1 s), so with pages of 100 a start at 100,000 CRs with 200,000 children
/// spent two minutes listing; a page is decoded whole, and 500 CRs with status are about 5 MB
/// of transient memory.
const LIST_PAGE: u32 = 500;

/// The CRs this entry watches: in each of its namespaces if the entry names them
/// ([`CrdEntry::watched_namespaces`](ork_katalog::CrdEntry::watched_namespaces)), else in all;
/// with the entry's label and field selectors.
pub(super) fn cr_watch(ctx: &EntryContext, client: &Client) -> (Vec<Api<Lean>>, watcher::Config) {
    let entry = &ctx.entry;
    let apis = match entry.watched_namespaces().filter(|_| entry.namespaced) {
        Some(namespaces) => namespaces
            .iter()
            .map(|ns| Api::namespaced_with(client.clone(), ns, &ctx.cr_resource))
            .collect(),
        None => vec![Api::all_with(client.clone(), &ctx.cr_resource)],
    };
    let mut config = watcher::Config::default().page_size(LIST_PAGE);
    let labels: Vec<String> = entry
        .label_selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !labels.is_empty() {
        config = config.labels(&labels.join(","));
    }
    let fields: Vec<String> = entry
        .field_selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !fields.is_empty() {
        config = config.fields(&fields.join(","));
    }
    (apis, config)
}

/// Where a watch sends what it sees: the entry loop, with what it needs to read events.
#[derive(Clone)]
pub(super) struct Feed {
    pub observer: Observer,
    pub inputs: UnboundedSender<Input>,
    pub ctx: Arc<EntryContext>,
    pub process: Arc<Process>,
}

/// The CRs' watch (one per namespace watched, [merged](super::scopes::merged) into one). A 404
/// (the CRD deleted) makes the entry degraded and not ready; the next event makes it whole
/// again.
pub(super) async fn watch_crs(feed: Feed, apis: Vec<Api<Lean>>, config: watcher::Config) {
    let Feed {
        observer,
        inputs,
        ctx,
        process,
    } = feed;
    let resource = ctx.cr_resource.clone();
    let scopes = apis
        .into_iter()
        .map(|api| {
            let namespace = api.namespace().map(str::to_string);
            (namespace, resilient(watcher(api, config.clone())))
        })
        .collect();
    let mut stream = super::scopes::merged(scopes, Lean::tombstone);
    let mut unserved = false;
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                if let Some(o) = object_of(&event)
                    && let Some(why) = undecodable(&o.object.metadata)
                {
                    // Kept (its reconcile fails and says why on the CR), never acted on.
                    tracing::warn!(cr = %key_of(&o.object), reason = why, "a CR cannot be read whole");
                    process
                        .metrics
                        .undecodable(&ctx.name, &ctx.entry.api_types.kind);
                }
                let event = plain(event, |o| typed(o.object, &resource));
                if let Some(step) = observer.cr(&event)
                    && inputs.send(Input::Cr(step)).is_err()
                {
                    return;
                }
                if std::mem::take(&mut unserved) && inputs.send(Input::Served(None)).is_err() {
                    return;
                }
            }
            Err(e) => {
                if not_served(&e) {
                    unserved = true;
                    let why = format!(
                        "the API server does not serve {}/{} (404): was its CRD deleted?",
                        resource.api_version, resource.plural
                    );
                    if inputs.send(Input::Served(Some(why))).is_err() {
                        return;
                    }
                }
                tracing::warn!(error = %e, "watch of CRs failed; retrying");
            }
        }
    }
}

/// Children of one managed type, selected by ork's label, in scope `scope_index` of the type's
/// scopes. An object whose owner label ork did not write (no `orkestra-remote` field manager)
/// loses that label: it is nobody's child as far as ork is concerned.
pub(super) async fn watch_children(
    feed: Feed,
    client: Client,
    type_index: usize,
    scope_index: usize,
    scope: Option<String>,
) {
    let Feed {
        observer,
        inputs,
        ctx,
        process,
    } = feed;
    let t = &ctx.children[type_index];
    let api: Api<Lean> = match &scope {
        Some(ns) => Api::namespaced_with(client, ns, &t.resource),
        None => Api::all_with(client, &t.resource),
    };
    let config = watcher::Config::default()
        .page_size(LIST_PAGE)
        .labels(&format!("{MANAGED}=true"));
    let resource = t.resource.clone();
    let mut stream = resilient(watcher(api, config));
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                if let Some(o) = object_of(&event)
                    && !matches!(event, watcher::Event::Delete(_))
                    && let Some(why) = undecodable(&o.object.metadata)
                {
                    // Not a child ork can judge: left out, as if absent (ork applies what the
                    // service asks for again).
                    tracing::warn!(kind = %t.managed.kind, child = %key_of(&o.object), reason = why, "a child cannot be read whole; skipped");
                    process.metrics.undecodable(&ctx.name, &t.managed.kind);
                    continue;
                }
                let event = plain(event, |o| typed(forget_foreign_owner(o), &resource));
                let step = observer.child(type_index, &event);
                let input = Input::Child {
                    type_index,
                    scope: scope_index,
                    step,
                };
                if inputs.send(input).is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(kind = %t.managed.kind, error = %e, "watch of children failed; retrying");
            }
        }
    }
}

/// Who holds each object of a managed type in `scope` that the children's watch does not see:
/// a metadata-only watch of the complement of its selector (`managed!=true`, which also matches
/// objects without the label), so that a name ork has not applied is known to be free or taken
/// without asking the API server per child, and ork's own children do not come twice. Together
/// the two watches see every object; one whose label changes leaves one and enters the other.
/// The owner label counts only where ork's field manager wrote the object, as for the children.
pub(super) async fn watch_holders(
    mut writer: CacheWriter<Holder>,
    client: Client,
    t: ChildType,
    scope: Option<String>,
) {
    // `PartialObjectMeta` makes kube ask for metadata only.
    let api: Api<PartialObjectMeta<DynamicObject>> = match &scope {
        Some(ns) => Api::namespaced_with(client, ns, &t.resource),
        None => Api::all_with(client, &t.resource),
    };
    let config = watcher::Config::default()
        .page_size(LIST_PAGE)
        .labels(&format!("{MANAGED}!=true"));
    let mut stream = resilient(watcher(api, config));
    let holder = |o: &PartialObjectMeta<DynamicObject>| {
        let meta = &o.metadata;
        let mut holder = Holder::of(meta);
        let ork_wrote_it = meta
            .managed_fields
            .iter()
            .flatten()
            .any(|m| m.manager.as_deref() == Some(FIELD_MANAGER));
        if !ork_wrote_it {
            holder.owner_label = None;
        }
        Some(holder)
    };
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => writer.apply_with(&event, holder),
            Err(e) => {
                tracing::warn!(kind = %t.managed.kind, error = %e, "metadata watch failed; retrying");
            }
        }
    }
}

fn forget_foreign_owner(o: Lean) -> DynamicObject {
    let mut object = o.object;
    if !o.written_by_ork {
        object.labels_mut().remove(OWNER_UID);
    }
    object
}

/// The event with each object made plain by `f`.
fn plain(
    event: watcher::Event<Lean>,
    f: impl Fn(Lean) -> DynamicObject,
) -> watcher::Event<DynamicObject> {
    match event {
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(o) => watcher::Event::InitApply(f(o)),
        watcher::Event::InitDone => watcher::Event::InitDone,
        watcher::Event::Apply(o) => watcher::Event::Apply(f(o)),
        watcher::Event::Delete(o) => watcher::Event::Delete(f(o)),
    }
}

/// Whether a watch failed because the API server does not serve the type (404).
fn not_served(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.code == 404,
        watcher::Error::WatchError(s) => s.code == 404,
        _ => false,
    }
}

/// The object an event carries, if any.
fn object_of<K>(event: &watcher::Event<K>) -> Option<&K> {
    match event {
        watcher::Event::InitApply(o) | watcher::Event::Apply(o) | watcher::Event::Delete(o) => {
            Some(o)
        }
        watcher::Event::Init | watcher::Event::InitDone => None,
    }
}

/// A watcher that lists again at once when its watch expired, and otherwise waits out each
/// failure with [`WatchBackoff`], which starts over only once the watch makes progress: an
/// object or the end of a list, not the mere start of one (a list that fails on every page
/// used to retry every 250 ms, since each attempt begins with `Init`).
fn resilient<K: Send + 'static>(
    stream: impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send + 'static,
) -> futures::stream::BoxStream<'static, watcher::Result<watcher::Event<K>>> {
    let progress = Arc::new(AtomicBool::new(false));
    let seen = progress.clone();
    relist_expired_at_once(stream)
        .inspect(move |item| {
            if progressed(item) {
                seen.store(true, Ordering::Relaxed);
            }
        })
        .backoff(WatchBackoff {
            last: None,
            progress,
        })
        .boxed()
}

/// Whether a watch item is progress: an object or the end of a list, not an error nor the start
/// of a list.
fn progressed<K>(item: &watcher::Result<watcher::Event<K>>) -> bool {
    matches!(item, Ok(e) if !matches!(e, watcher::Event::Init))
}

/// The API server leaves `apiVersion` and `kind` out of the items of a list, so after a
/// (re-)list a cached object would lack them: the service would get a CR without its kind and
/// every child would look changed. They are the watched type's.
fn typed(mut o: DynamicObject, resource: &ApiResource) -> DynamicObject {
    if o.types.is_none() {
        o.types = Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
    o
}

/// A watch whose resourceVersion has expired (410 Gone: the API server's history no longer
/// reaches back to it, as after its restart) lists again at once, as client-go's reflector does,
/// instead of waiting out the error backoff: the watcher has already dropped the old version, and
/// the backoff had grown while the API server was away (in the API-server-restart scenario the
/// CRs' watch met its 410 13 s after the server was back and then waited 5 s more). At most
/// once per [`EXPIRED_QUIET`]: a server that answers 410 again and again is backed off.
fn relist_expired_at_once<K>(
    stream: impl Stream<Item = watcher::Result<watcher::Event<K>>>,
) -> impl Stream<Item = watcher::Result<watcher::Event<K>>> {
    let mut last: Option<Instant> = None;
    stream.filter(move |item| {
        let expired = matches!(item, Err(watcher::Error::WatchError(s)) if s.code == 410);
        let at_once = expired && last.is_none_or(|t| t.elapsed() >= EXPIRED_QUIET);
        if at_once {
            last = Some(Instant::now());
            tracing::info!("watch expired (410 Gone): listing again");
        }
        futures::future::ready(!at_once)
    })
}

const EXPIRED_QUIET: Duration = Duration::from_secs(10);

/// How a watch waits after an error: 250 ms doubling up to 5 s, ±20 % so that replicas do not
/// retry in step, and back to 250 ms once the watch made progress (see [`resilient`]).
/// kube-runtime's default grows to 30 s: after an API server restart, ork stayed blind for up
/// to half a minute.
#[derive(Debug, Default)]
struct WatchBackoff {
    last: Option<Duration>,
    /// Set when an event other than the start of a list came since the last reset.
    progress: Arc<AtomicBool>,
}

impl WatchBackoff {
    const FIRST: Duration = Duration::from_millis(250);
    const MAX: Duration = Duration::from_secs(5);
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let wait = self.last.map_or(Self::FIRST, |d| (d * 2).min(Self::MAX));
        self.last = Some(wait);
        Some(jittered(wait))
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        if self.progress.swap(false, Ordering::Relaxed) {
            self.last = None;
        }
    }
}

/// `d` ± 20 %, from the clock's nanoseconds (no random source needed for this).
fn jittered(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.subsec_nanos());
    let factor = 0.8 + 0.4 * f64::from(nanos % 1000) / 1000.0;
    d.mul_f64(factor)
}

/// One watch of an input type (SPEC §20): the objects of `api` (a namespace or all, perhaps
/// narrowed to one `name`), each event handed to the entry as it comes; a (re)list is handed
/// over whole once it is complete ([`InputEvent::Reset`]), the first with `synced`, which the
/// entry fires once it holds them.
pub(super) async fn watch_input(
    inputs: UnboundedSender<Input>,
    type_index: usize,
    api: Api<DynamicObject>,
    resource: ApiResource,
    namespace: Option<String>,
    name: Option<String>,
    synced: tokio::sync::oneshot::Sender<()>,
) {
    let mut config = watcher::Config::default().page_size(LIST_PAGE);
    if let Some(name) = &name {
        config = config.fields(&format!("metadata.name={name}"));
    }
    let mut synced = Some(synced);
    let mut listing: Vec<serde_json::Value> = Vec::new();
    let typed = |mut o: DynamicObject| {
        o.types = Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
        o.metadata.managed_fields = None;
        serde_json::to_value(o).unwrap_or_default()
    };
    let mut stream = resilient(watcher(api, config));
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(watcher::Event::Init) => {
                listing.clear();
                continue;
            }
            Ok(watcher::Event::InitApply(o)) => {
                listing.push(typed(o));
                continue;
            }
            Ok(watcher::Event::InitDone) => crate::inputs::InputEvent::Reset {
                namespace: namespace.clone(),
                name: name.clone(),
                objects: std::mem::take(&mut listing),
            },
            Ok(watcher::Event::Apply(o)) => crate::inputs::InputEvent::Applied(typed(o)),
            Ok(watcher::Event::Delete(o)) => crate::inputs::InputEvent::Deleted(typed(o)),
            Err(e) => {
                tracing::warn!(kind = %resource.kind, error = %e, "watch of an input type failed; retrying");
                continue;
            }
        };
        let synced = match &event {
            crate::inputs::InputEvent::Reset { .. } => synced.take(),
            _ => None,
        };
        if inputs
            .send(Input::Inputs {
                type_index,
                event,
                synced,
            })
            .is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    fn gone() -> watcher::Result<watcher::Event<()>> {
        let mut status = Status::failure("too old resource version", "Expired");
        status.code = 410;
        Err(watcher::Error::WatchError(Box::new(status)))
    }

    #[tokio::test]
    async fn an_expired_watch_lists_again_without_the_backoff_once_per_quiet_spell() {
        let items = vec![
            gone(),
            Ok(watcher::Event::Init),
            gone(),
            Err(watcher::Error::NoResourceVersion),
        ];
        let out: Vec<_> = relist_expired_at_once(futures::stream::iter(items))
            .collect()
            .await;
        assert!(matches!(out[0], Ok(watcher::Event::Init)), "{out:?}");
        assert!(
            matches!(&out[1], Err(watcher::Error::WatchError(s)) if s.code == 410),
            "a second 410 within the quiet spell goes to the backoff: {out:?}"
        );
        assert!(matches!(out[2], Err(watcher::Error::NoResourceVersion)));
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn watch_retries_grow_to_five_seconds_and_start_over_after_an_event() {
        let mut b = WatchBackoff::default();
        let waits: Vec<Duration> = (&mut b).take(8).collect();
        assert!(waits[0] <= Duration::from_millis(300), "{waits:?}");
        assert!(
            waits.iter().all(|w| *w <= Duration::from_secs(6)),
            "{waits:?}"
        );
        assert!(waits[7] >= Duration::from_secs(4), "{waits:?}");
        b.reset();
        assert!(
            b.next().is_some_and(|w| w >= Duration::from_secs(4)),
            "no progress, no fresh start"
        );
        b.progress.store(true, Ordering::Relaxed);
        b.reset();
        assert!(b.next().is_some_and(|w| w <= Duration::from_millis(300)));
    }

    #[test]
    fn a_list_that_fails_after_it_began_backs_off_growing() {
        let failed: watcher::Result<watcher::Event<()>> = Err(watcher::Error::NoResourceVersion);
        assert!(!progressed(&Ok(watcher::Event::<()>::Init)));
        assert!(!progressed(&failed));
        assert!(progressed(&Ok(watcher::Event::InitApply(()))));
        assert!(progressed(&Ok(watcher::Event::<()>::InitDone)));
        // What the stream does when every attempt begins a list and fails on its page: reset
        // (after `Init`), then the next wait.
        let mut b = WatchBackoff::default();
        let waits: Vec<Duration> = (0..6)
            .map(|_| {
                b.reset();
                b.next().expect("a wait")
            })
            .collect();
        assert!(waits[5] >= Duration::from_secs(4), "{waits:?}");
    }
}
