from django.urls import path

from explanations import views

app_name = "explanations"

urlpatterns = [
    path("how-attention-works/", views.how_attention_works, name="how_attention_works"),
    path("faithfulness/", views.faithfulness, name="faithfulness"),
]
