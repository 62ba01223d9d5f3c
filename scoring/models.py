"""Scoring data: claim types, rules, model versions, messages and their predictions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce

from scoring.constants import REVIEWED_STATUSES, Channel, MessageStatus, RouteReason
from scoring.routing import has_unread_part


class ClaimType(models.Model):
    """A regulated claim type. `code` is stable (it is a class of the classifier and is
    referenced by rules, predictions and decisions); name and description are editable."""

    code = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    position = models.PositiveSmallIntegerField(
        unique=True, help_text="1-4: keyboard shortcut and display order."
    )

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return self.name


class RuleSet(models.Model):
    """A numbered, immutable-once-published set of rules. Exactly one set is active; a
    RuleMatch records the set version it came from, so old matches stay explainable."""

    version = models.PositiveIntegerField(unique=True)
    is_active = models.BooleanField(default=False)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    backtest = models.ForeignKey(
        "RuleSetBacktest",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The backtest this version was published on (a draft's); none for a roll back.",
    )
    restores = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The earlier version this one publishes again unchanged (a roll back); the note says why.",
    )

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_active"], condition=Q(is_active=True), name="one_active_rule_set"
            )
        ]

    def __str__(self) -> str:
        return f"Rule set v{self.version}{' (active)' if self.is_active else ''}"


class RuleSetDraft(models.Model):
    """An unpublished rule-set version: the rules it would have (RuleDraft fields as JSON), the
    version it was edited from, and why. A draft is backtested against the active rules over
    stored messages, then published as a new active RuleSet that links to that backtest
    (scoring.services.rule_sets). A draft is never edited: another edit is another draft."""

    base = models.ForeignKey(RuleSet, on_delete=models.PROTECT, related_name="drafts")
    rules = models.JSONField(help_text="[{code, claim_type, pattern, context_terms, ...}] in code order.")
    note = models.CharField(max_length=300)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    published = models.OneToOneField(
        RuleSet, null=True, blank=True, on_delete=models.PROTECT, related_name="draft"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Draft #{self.pk} from v{self.base.version}"


class RuleSetBacktest(models.Model):
    """A draft run over the stored messages of a period against the rules active at the time
    (monitoring.backtest): what it would route that they do not and the reverse, per rule and
    claim type, with how reviewers decided those messages. Computed by a task on the default
    queue; `processed` of `total` is its progress, `results` every figure."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    draft = models.ForeignKey(RuleSetDraft, on_delete=models.CASCADE, related_name="backtests")
    active = models.ForeignKey(
        RuleSet, on_delete=models.PROTECT, related_name="+", help_text="The active version compared with."
    )
    days = models.PositiveSmallIntegerField()
    since = models.DateTimeField()
    until = models.DateTimeField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    total = models.PositiveIntegerField(default=0)
    processed = models.PositiveIntegerField(default=0)
    results = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Backtest #{self.pk} of draft #{self.draft_id} ({self.status})"

    @property
    def percent(self) -> int:
        return int(100 * self.processed / self.total) if self.total else 0


class Rule(models.Model):
    """A phrase rule: `pattern` is a case-insensitive regular expression over the text.
    Optional `context_terms` must occur within `context_window` words of the match; with
    `negation_guard` a negation word just before the match suppresses it."""

    rule_set = models.ForeignKey(RuleSet, on_delete=models.CASCADE, related_name="rules")
    code = models.SlugField(max_length=64, help_text="Stable rule id, e.g. GR-001.")
    claim_type = models.ForeignKey(ClaimType, on_delete=models.PROTECT, related_name="rules")
    pattern = models.CharField(max_length=500)
    context_terms = models.JSONField(default=list, blank=True)
    context_window = models.PositiveSmallIntegerField(default=8)
    negation_guard = models.BooleanField(default=True)
    enabled = models.BooleanField(default=True)
    description = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["rule_set", "code"]
        constraints = [models.UniqueConstraint(fields=["rule_set", "code"], name="unique_rule_code_per_set")]

    def __str__(self) -> str:
        return f"{self.code} v{self.rule_set.version}"


class ModelVersion(models.Model):
    """A trained classifier artifact plus the threshold it routes with.

    A threshold is never edited in place: a new threshold is a new version that shares the
    artifact (`artifact_path`, `artifact_sha256`) and points at its `parent`."""

    name = models.SlugField(max_length=100, unique=True)
    base_model = models.CharField(max_length=300)
    artifact_path = models.CharField(max_length=500)
    artifact_sha256 = models.CharField(max_length=64)
    corpus_sha256 = models.CharField(max_length=64)
    labels = models.JSONField(help_text="Class labels in head order; index 0 is no_claim.")
    hyperparameters = models.JSONField(default=dict)
    threshold = models.FloatField()
    threshold_rule = models.CharField(max_length=300)
    metrics = models.JSONField(default=dict)
    extra_data = models.JSONField(
        default=list, blank=True, help_text="Extra training files: [{path, sha256, rows}]."
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="threshold_variants"
    )
    is_active = models.BooleanField(default=False)
    is_shadow = models.BooleanField(default=False)
    shadow_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When shadow scoring started: messages after it get a shadow prediction.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_active"], condition=Q(is_active=True), name="one_active_model_version"
            ),
            models.CheckConstraint(
                condition=Q(threshold__gte=0.0) & Q(threshold__lte=1.0), name="threshold_in_unit_range"
            ),
            models.CheckConstraint(
                condition=~(Q(is_active=True) & Q(is_shadow=True)), name="active_is_not_shadow"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class ModelActivation(models.Model):
    """Who activated which version, when, why, with the metrics at that moment. Rolling back
    is an activation of the older version, recorded the same way."""

    model_version = models.ForeignKey(ModelVersion, on_delete=models.PROTECT, related_name="activations")
    previous = models.ForeignKey(
        ModelVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    activated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    activated_at = models.DateTimeField(auto_now_add=True)
    reason = models.TextField()
    metrics = models.JSONField(default=dict)

    class Meta:
        ordering = ["-activated_at"]
        get_latest_by = "activated_at"

    def __str__(self) -> str:
        return f"{self.model_version} at {self.activated_at:%Y-%m-%d %H:%M}"


class ModelComparison(models.Model):
    """A challenger (`candidate`) compared with a reference version (`baseline`) on the corpus
    test split, the novel-phrasing slice, drift phrasings and recent reviewed traffic (where the
    reviewers are the reference). Computed by a task; `results` holds every figure."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    baseline = models.ForeignKey(ModelVersion, on_delete=models.CASCADE, related_name="+")
    candidate = models.ForeignKey(ModelVersion, on_delete=models.CASCADE, related_name="+")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    results = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.candidate} vs {self.baseline} ({self.status})"


class WorkerDevice(models.Model):
    """What a Celery worker that computes with the model found when it checked its device at
    start-up (scoring.worker): one row per worker node, replaced at each start. A worker whose
    device is not usable consumes nothing; /healthz and the monitoring queue panel show it."""

    node = models.CharField(max_length=255, unique=True)  # celery node name, e.g. gpu0@host
    queues = models.JSONField(default=list)
    requested = models.CharField(max_length=32)  # SCORING_DEVICE
    device = models.CharField(max_length=32, blank=True)  # resolved, e.g. cuda:0
    usable = models.BooleanField()
    consuming = models.BooleanField()  # False: the worker cancelled its device queues
    reason = models.TextField(blank=True)
    torch_version = models.CharField(max_length=64)
    cuda_version = models.CharField(max_length=32, blank=True)
    cuda_available = models.BooleanField(default=False)
    gpu_name = models.CharField(max_length=255, blank=True)
    reported_at = models.DateTimeField()

    class Meta:
        ordering = ["node"]

    def __str__(self) -> str:
        return f"{self.node}: {self.device or self.requested} {'usable' if self.usable else 'NOT usable'}"


class Conversation(models.Model):
    """Messages that belong together: an email thread (References / In-Reply-To, else the
    normalised subject and the participants) or a chat conversation (a Slack channel, a
    transcript's conversation_id). `key` is how the sources find it again
    (scoring.services.sources); messages point at it."""

    class Kind(models.TextChoices):
        EMAIL_THREAD = "email_thread", "Email thread"
        CHAT = "chat", "Chat conversation"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    key = models.CharField(max_length=300, unique=True)
    title = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title or self.key


MESSAGE_TEXT_FIELDS = frozenset({"body", "body_sha256"})
TEXT_IMMUTABLE = "The text of a reviewed message is evidence of its decision: it cannot be changed."


class MessageQuerySet(models.QuerySet):
    def update(self, **kwargs):
        if MESSAGE_TEXT_FIELDS & kwargs.keys() and self.filter(status__in=REVIEWED_STATUSES).exists():
            raise PermissionError(TEXT_IMMUTABLE)
        return super().update(**kwargs)


class Message(models.Model):
    """An ingested message. It is persisted before anything else happens and moves through
    explicit status transitions (scoring.constants.TRANSITIONS), each with its timestamp.

    Once reviewed (REVIEWED_STATUSES) its text never changes: refused here, in the queryset and
    by a database trigger (reviews migration 0004), so a decision's record shows the text the
    reviewer read.

    `external_id` is unique within a feed (the account that submitted the message; messages
    imported without one form a feed of their own), so that one feed's ids neither collide with
    nor reveal another's."""

    external_id = models.CharField(max_length=200, db_index=True)
    body = models.TextField()
    body_sha256 = models.CharField(max_length=64)
    sender = models.CharField(max_length=300, blank=True)
    channel = models.CharField(max_length=16, choices=Channel.choices, default=Channel.OTHER)
    received_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=MessageStatus.choices, default=MessageStatus.RECEIVED)
    status_reason = models.TextField(blank=True)
    route_reason = models.CharField(max_length=16, choices=RouteReason.choices, blank=True)
    is_qa_sample = models.BooleanField(default=False)
    has_rule_hit = models.BooleanField(default=False)
    routing_prediction = models.ForeignKey(
        "Prediction",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The active model's prediction that routed this message (never a shadow one).",
    )
    queue_score = models.FloatField(
        null=True, blank=True, help_text="Routing score, denormalised for the review queue order."
    )
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Times scoring crashed or timed out its worker on this message alone."
    )
    explain_attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Times explaining crashed or timed out its worker on this message alone."
    )
    # Tries that ended without a verdict: the message did not fit in device memory even alone
    # (capped by MAX_OOM_DEFERRALS), or a worker took its task and left it unfinished, and the
    # sweeper published it again (capped by MAX_SWEEP_REQUEUES; a task still waiting on the broker,
    # behind a backlog, is not counted). One pair per stage, as for the crash counts.
    deferrals = models.PositiveSmallIntegerField(
        default=0, help_text="Times scoring this message alone ran out of device memory."
    )
    explain_deferrals = models.PositiveSmallIntegerField(
        default=0, help_text="Times explaining this message alone ran out of device memory."
    )
    requeues = models.PositiveSmallIntegerField(
        default=0,
        help_text="Times the sweeper published scoring again after a worker had taken the task and left "
        "the message unscored.",
    )
    explain_requeues = models.PositiveSmallIntegerField(
        default=0,
        help_text="Times the sweeper published explaining again after a worker had taken the task and "
        "left the message unexplained.",
    )
    taken_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a worker last took a scoring or explanation task of this message (the sweepers "
        "count a re-publish only when it was taken since the last publish).",
    )
    # The feed. PROTECT: deleting a feed's account would merge its messages into the feed without
    # one, where their ids may collide; deactivate the account instead.
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Where it came from (scoring.sources): an email's headers and attachments, the thread or
    # chat conversation it belongs to. Empty for messages posted as JSON.
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.PROTECT, related_name="messages"
    )
    subject = models.CharField(max_length=500, blank=True)
    message_id_header = models.CharField(
        max_length=500, blank=True, help_text="An email's Message-ID (without <>), for threading."
    )
    headers = models.JSONField(
        default=dict,
        blank=True,
        help_text="Email: from, to, cc, date, message_id, in_reply_to, references, notes; chat: "
        "the source's details.",
    )
    attachments = models.JSONField(
        default=list,
        blank=True,
        help_text="[{name, content_type, size, scored, note, start, end, unreadable}]: [start, end) "
        "is a scored attachment's text in the body; unreadable is true for a part whose text could "
        "not be read.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    explained_at = models.DateTimeField(null=True, blank=True)
    in_review_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    cleared_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)

    objects = MessageQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["submitted_by", "external_id"], name="message_external_id_per_feed"
            ),
            # NULLs are distinct in a unique constraint: the feed without an account needs its own.
            models.UniqueConstraint(
                fields=["external_id"],
                condition=Q(submitted_by__isnull=True),
                name="message_external_id_without_feed",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "updated_at"], name="message_status_updated"),
            models.Index(fields=["received_at"], name="message_received"),
            models.Index(fields=["-created_at", "-id"], name="message_created_desc"),
            # The review queue: only messages in review, in priority order (a message without a
            # score last, on every database: reviews.selectors.queue_priority), and a covering
            # index for the queue's facet counts.
            models.Index(
                Coalesce(F("queue_score"), Value(-1.0)).desc(),
                F("received_at"),
                F("id"),
                condition=Q(status=MessageStatus.IN_REVIEW),
                name="message_review_queue",
            ),
            models.Index(
                fields=["routing_prediction"],
                include=["has_rule_hit", "is_qa_sample", "received_at"],
                condition=Q(status=MessageStatus.IN_REVIEW),
                name="message_review_facets",
            ),
            # Monitoring: the roll-up recomputes the days of messages changed since its last refresh.
            models.Index(fields=["updated_at"], name="message_updated"),
            # A conversation's messages in time order (the thread view, a chat line's context).
            models.Index(fields=["conversation", "received_at"], name="message_conversation_time"),
            models.Index(
                fields=["message_id_header"], condition=~Q(message_id_header=""), name="message_rfc822_id"
            ),
        ]

    def __str__(self) -> str:
        return self.external_id

    def save(self, *args, **kwargs) -> None:
        stored = getattr(self, "_stored_text", None)
        if stored is not None and stored[2] in REVIEWED_STATUSES:
            body, body_sha256, _ = stored
            if (body is not None and self.body != body) or (
                body_sha256 is not None and self.body_sha256 != body_sha256
            ):
                raise PermissionError(TEXT_IMMUTABLE)
        super().save(*args, **kwargs)
        self._stored_text = self._text_state()

    @classmethod
    def from_db(cls, db, field_names, values):
        instance = super().from_db(db, field_names, values)
        instance._stored_text = instance._text_state()
        return instance

    def refresh_from_db(self, using=None, fields=None, from_queryset=None) -> None:
        super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)
        stored = list(getattr(self, "_stored_text", (None, None, None)))
        names = ("body", "body_sha256", "status")
        for index, (name, value) in enumerate(zip(names, self._text_state(), strict=True)):
            if fields is None or name in fields:
                stored[index] = value
        self._stored_text = tuple(stored)

    def _text_state(self) -> tuple[str | None, str | None, str | None]:
        loaded = self.__dict__
        return loaded.get("body"), loaded.get("body_sha256"), loaded.get("status")

    @property
    def has_unread_part(self) -> bool:
        """Whether a part of it could not be read (an attachment stored with "unreadable": true):
        nothing in that part was checked, so the message is routed to review (scoring.routing)."""
        return has_unread_part(self.attachments)


class Prediction(models.Model):
    """One model version's score of one message, with the threshold in force at that time.
    Shadow predictions (a challenger's) route nothing."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="predictions")
    model_version = models.ForeignKey(ModelVersion, on_delete=models.PROTECT, related_name="predictions")
    score = models.FloatField()
    claim_type = models.ForeignKey(
        ClaimType,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Argmax over the claim classes (set whatever the score).",
    )
    probabilities = models.JSONField(help_text="{label: probability} of the window that scored max.")
    window_scores = models.JSONField(
        default=list,
        help_text="[{start, end, score, kind, routes}] per token window (kind: its message part).",
    )
    segments = models.JSONField(
        default=list,
        help_text="[{kind, start, end, routes}]: the message parts the model read apart "
        "(body, signature, quoted history; scoring.segmentation), empty for a whole-text model.",
    )
    context = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the message was read with beyond its own text (scoring.services.context): "
        "a chat line's earlier lines from the same sender ({lines: {message_ids, text, score, "
        "before_score, line_score, drove}}), quoted history already seen in the thread "
        "({seen_quoted: [{start, end, message_id}]}).",
    )
    threshold = models.FloatField()
    flagged = models.BooleanField()
    is_shadow = models.BooleanField(default=False)
    latency_ms = models.FloatField(help_text="Model time for this message's batch, per message.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["message", "model_version"], name="one_prediction_per_message_version"
            )
        ]
        indexes = [
            models.Index(fields=["model_version", "created_at"], name="prediction_version_time"),
            models.Index(fields=["created_at"], name="prediction_time"),
            # Lets the review queue count its facets (claim type, model version) from the index
            # alone, without reading the wide prediction rows (PostgreSQL; elsewhere a plain index).
            models.Index(
                fields=["id"], include=["claim_type", "model_version"], name="prediction_facet_cover"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.message_id}@{self.model_version_id}: {self.score:.3f}"


class RuleMatch(models.Model):
    """A rule hit on a message: which rule (code and rule-set version), where, what text."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="rule_matches")
    rule = models.ForeignKey(Rule, on_delete=models.PROTECT, related_name="matches")
    rule_code = models.SlugField(max_length=64)
    rule_set_version = models.PositiveIntegerField()
    claim_type = models.ForeignKey(ClaimType, on_delete=models.PROTECT, related_name="+")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.TextField()

    class Meta:
        ordering = ["message", "start"]
        constraints = [
            models.UniqueConstraint(fields=["message", "rule", "start"], name="unique_rule_match_position"),
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="rule_match_span"),
        ]

    def __str__(self) -> str:
        return f"{self.rule_code}@{self.start}-{self.end}"


class WorkStage(models.TextChoices):
    """The model steps whose batches are claimed (scoring.services.claims)."""

    SCORE = "score", "Scoring"
    EXPLAIN = "explain", "Explaining"


class WorkClaim(models.Model):
    """A batch a worker process is computing (scoring or explaining): which messages, which
    process (host key and PID: scoring.liveness) and its heartbeat. It is written (committed)
    before the work starts and deleted in the transaction that writes the results, so a claim
    whose process is gone is a batch that crashed or was killed: the sweeper, or the next
    delivery of the batch, splits it in two (bisection) and publishes the halves, until the
    message that crashes it is alone; only that message is charged (scoring.services.claims)."""

    stage = models.CharField(max_length=8, choices=WorkStage.choices)
    message_ids = models.JSONField()
    node = models.CharField(max_length=255, blank=True)  # celery node name, for people
    host_key = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    task_id = models.CharField(max_length=255, blank=True)
    task_try = models.PositiveSmallIntegerField(default=0)  # the task's retries when it started
    started_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField()

    class Meta:
        ordering = ["started_at"]
        indexes = [models.Index(fields=["stage", "started_at"], name="work_claim_stage")]

    def __str__(self) -> str:
        holder = self.node or self.host_key
        return f"{self.stage} of {len(self.message_ids)} messages by {holder} pid {self.pid}"


class MessageRetry(models.Model):
    """A compliance admin sent a failed message back to scoring: who, when, why, and what the
    message was before (its status, reason and crash count). Append-only: never edited."""

    message = models.ForeignKey(Message, on_delete=models.PROTECT, related_name="retries")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True)
    reason = models.TextField()
    previous_status = models.CharField(max_length=16, choices=MessageStatus.choices)
    previous_reason = models.TextField(blank=True)
    previous_attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-requested_at", "-id"]

    def __str__(self) -> str:
        return f"retry of {self.message_id} by {self.requested_by_id} at {self.requested_at:%Y-%m-%d %H:%M}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise ValueError("A retry record is never changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("A retry record is never deleted.")
