"""Who may do what: authentication state lives in each connection's
:class:`~broker.net.session.Session`; authorization is one call,
:meth:`Authorizer.authorize` (principal, operation, resource), that the dispatcher makes for what
each handler declares (:mod:`broker.registry`). TLS transports, the SASL mechanisms (PLAIN,
SCRAM), the ACL store and quotas will live in this package.
"""
