"""The write-request rule: a question that asks, in the imperative, for a change to data is routed only to
templates whose own texts use that verb; every other candidate is taken out, and with none left the decision
says `asks_to_change_data`. Questions about changes ("show deleted orders") are not requests."""

from __future__ import annotations

import pytest

from server.routing.decision import Reason, decide
from server.routing.policy import RoutingPolicy
from server.routing.write_requests import WriteRequest, asked_verb, does, refuse_write_requests
from server.testing.templates import candidate, template

FORMER = template(
    tid="former_employees", description="Employees who left the company", examples=["list terminated employees"]
)
CANCEL = template(tid="cancel_order", description="Cancel an order by its number", examples=["cancel order 42"])
DETAILS = template(tid="order_details", description="The lines of one order", examples=["what is in order 42"])


@pytest.mark.parametrize(
    ("question", "verb"),
    [
        ("delete all employees", "delete"),
        ("DROP TABLE employees;", "drop"),
        ("'; DELETE FROM orders; --", "delete"),
        ("insert a new order for Sakura Robotics", "insert"),
        ("update Priya Raman's salary to 500000", "update"),
        ("remove customer Sakura Robotics", "remove"),
        ("Can you please erase all orders from 2023?", "erase"),
        ("I want to cancel my order", "cancel"),
        ("top 5 customers. Then delete them", "delete"),
        ("show deleted orders", None),  # about a change, not a request for one
        ("list cancelled orders", None),
        ("how do I delete an order?", None),
        ("who was removed from the project", None),
        ("update on order 42", None),  # a noun
        ("drop off location for rental 5", None),
        ("update me on sales", None),
        ("cancel", None),  # no object: "never mind", not a command on data
        ("change it to Sales", None),  # a follow-up, not a write ("change" is not read as a request)
        ("add Marketing", None),
        # the verb as a noun, an edit of the answer, a read beside it, "never mind"
        ("drop in sales by region last quarter", None),
        ("update status of order 42", None),
        ("cancel rate by month", None),
        ("Update: how many orders today?", None),
        ("insert date of the latest order", None),
        ("remove duplicates from the customer list", None),
        ("remove the date filter", None),
        ("drop Marketing and show Sales", None),
        ("cancel that", None),
        ("show orders, then delete them", "delete"),
        ("delete them", "delete"),
        # an action on a record (ACTION_VERBS), and the same words naming one done or as a noun
        ("approve Emily Miller's vacation request", "approve"),
        ("please reject all pending leave requests", "reject"),
        ("can you promote Priya Raman to director", "promote"),
        ("raise Robert Kline's salary by 5%", "raise"),
        ("increase the Marketing budget by 500k", "increase"),
        ("assign ticket 42 to Bob", "assign"),
        ("fire Robert Kline", "fire"),
        ("approved leave requests this year", None),
        ("terminated employees in 2024", None),
        ("increase in headcount by department", None),
        ("increase by department last year", None),
        ("decrease over time in returns", None),
        ("raise history for Robert Kline", None),
        ("give me the employees in Sales", None),  # "give" reads
        ("approve requests from Emily Miller", "approve"),  # 'requests' is the object, not a noun after the verb
        ("reject requests that are pending", "reject"),
        ("approve time off for Emily Miller", "approve"),
        ("cancel requests by month", None),
        # an amount changed in the last answer, in a conversation
        ("raise it to 200000", None),
        ("reduce it to the top 3", None),
        ("decrease the year to 2023", None),
    ],
)
def test_the_requests_read(question, verb):
    assert asked_verb(question) == verb


def test_a_template_does_a_verb_its_texts_use_in_a_form_that_does_it():
    assert does(CANCEL, "cancel")
    assert does(template(tid="cancel_subscription", description="Ends a subscription"), "cancel")  # its id says it
    assert not does(FORMER, "delete") and not does(DETAILS, "cancel")
    # a form that describes the change done, or names it, is a read: listing cancelled orders cancels none
    assert not does(
        template(tid="orders_cancelled", description="Orders cancelled last week", examples=["list the cancellations"]),
        "cancel",
    )
    assert not does(template(tid="recent_updates", description="Records updated recently"), "update")


def test_the_templates_that_only_read_are_taken_out_and_the_decision_says_why():
    ranked = [candidate(FORMER, 0.9), candidate(DETAILS, 0.4)]
    kept, write = refuse_write_requests("delete all employees", ranked)
    assert kept == [] and write == WriteRequest("delete", ["hr/former_employees", "hr/order_details"])
    decision = decide(kept, RoutingPolicy(confidence_threshold=0.3), write)
    assert decision.reason is Reason.WRITE_REQUEST and not decision.execute and decision.selected is None


def test_a_template_that_does_the_change_still_answers_it():
    ranked = [candidate(DETAILS, 0.8), candidate(CANCEL, 0.7)]
    kept, write = refuse_write_requests("please cancel order 42", ranked)
    assert [c.template.id for c in kept] == ["cancel_order"] and write == WriteRequest("cancel", ["hr/order_details"])
    decision = decide(kept, RoutingPolicy(confidence_threshold=0.3), write)
    assert decision.execute and decision.selected is not None and decision.selected.template.id == "cancel_order"


def test_a_question_that_asks_for_no_change_is_left_alone():
    ranked = [candidate(FORMER, 0.9)]
    assert refuse_write_requests("list terminated employees", ranked) == (ranked, None)
    assert decide(ranked, RoutingPolicy(confidence_threshold=0.3)).reason is Reason.ROUTED


def test_an_action_verb_is_carried_out_by_a_template_that_does_its_kind():
    leave = template(
        tid="approve_leave", description="Approve a leave request", examples=["approve the leave request of Ana"]
    )
    listing = template(
        tid="leave_by_status", description="Leave requests by status", examples=["show approved leave requests"]
    )
    assert does(leave, "approve") and does(leave, "grant")  # a verb of the same kind
    assert not does(listing, "approve")  # "approved" names requests already approved
    kept, refused = refuse_write_requests("grant Ana's leave request", [candidate(listing, 0.8), candidate(leave, 0.6)])
    assert [c.template.id for c in kept] == ["approve_leave"]
    assert refused == WriteRequest("grant", ["hr/leave_by_status"])


def test_a_verb_of_the_same_kind_counts():
    account = template(tid="terminate_account", description="Close the account", examples=["please delete my account"])
    assert does(account, "remove") and does(account, "erase") and not does(account, "cancel")
    kept, write = refuse_write_requests("can you remove my account?", [candidate(account, 0.8), candidate(FORMER, 0.5)])
    assert [c.template.id for c in kept] == ["terminate_account"]
    assert write == WriteRequest("remove", ["hr/former_employees"])
