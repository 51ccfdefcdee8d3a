"""The transaction coordinator (KIP-98): transactional ids, their producer ids and epochs, and
the state of their transactions, kept in ``__transaction_state`` on the generic coordinator
runtime (:mod:`coordination.runtime`), one shard per partition of that topic."""
