//! How ork speaks with a service (SPEC §2, §15): what a reconcile reads for it besides the CR
//! and its children, the request, the answer made a [`Decision`] (checked whole), and what the
//! protocol changes in the rest of the reconcile: which objects are its to reconcile, how a
//! changed child is updated, whether ork writes its own status on the object, whether the
//! service sees its own writes. Orkestra's remote protocol ([`orkestra`]), and Metacontroller's
//! CompositeController and DecoratorController ([`metacontroller`]), are one implementation
//! each; the pipeline asks the entry's [`Protocol`] and never which one it is.

mod contract;
mod metacontroller;
mod orkestra;

pub(crate) use contract::Protocol;

use crate::entry::EntryContext;

/// The protocol of `ctx`'s entry.
pub(crate) fn of(ctx: &EntryContext) -> Box<dyn Protocol + '_> {
    match ctx.composite() {
        Some(composite) => Box::new(metacontroller::Metacontroller { ctx, composite }),
        None => Box::new(orkestra::Orkestra { ctx }),
    }
}
